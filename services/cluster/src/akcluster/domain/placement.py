"""Where a group's replicas would go: first-fit per node, with commit levels and pools.

Akash's rules (the Go provider's ``inventory.Adjust``), without its quirks:

- **Commit levels**: ``AP_OVERCOMMIT_PCT_CPU=50`` means the cluster sells 1.5× its CPU; a
  replica's committed CPU is ``round(requested / 1.5)`` (at least 1 when anything is asked).
  Fractional percentages count (Go divides integers first, so 50 % changed nothing). GPUs
  are never overcommitted.
- Each replica of each resource unit goes on the first node, in inventory order, that has
  room for all of it: CPU, memory (plus its ``ram``-class volumes, which are memory),
  ephemeral storage, GPUs of a model the unit accepts, and every persistent volume's class
  among the node's storage classes.
- Persistent volumes draw on the cluster-wide pool of their class; ``RANDOM_PORT`` endpoints
  on the node-port pool (once per unit: replicas share one Service); leased IPs on the IP
  pool (once per distinct sequence number in the group).
- GPU requirements are keys ``vendor/<v>/model/<m>[/ram/<r>][/interface/<i>]`` (``*`` for
  any model); a replica matches a node whose GPU model satisfies any one of them, and the
  offer names the model found, so price scripts see a concrete model.
- Replicas of one unit placed on different nodes must end up with the same concrete GPU
  model, else the offer would lie about some of them: such a unit does not fit.

:func:`place` is pure: it returns a :class:`Placement` or the reasons the group does not
fit, each naming the unit and what was short, which is what bid screening shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from akcluster.domain.inventory import Capacity, GPUModel, Node
from aktypes.attributes import Attribute, key_matches
from aktypes.events import ResourceOffer
from aktypes.groupspec import GroupSpec, ResourceUnit
from aktypes.resources import GPU, EndpointKind, Resources, rv


@dataclass(frozen=True)
class CommitLevels:
    """Overcommit percentages (Akash's ``AP_OVERCOMMIT_PCT_*``)."""

    cpu: Decimal = Decimal(0)
    memory: Decimal = Decimal(0)
    storage: Decimal = Decimal(0)


def committed(value: int, pct: Decimal) -> int:
    """What ``value`` costs the cluster when it sells ``1 + pct/100`` times its capacity."""
    if value <= 0 or pct <= 0:
        return max(value, 0)
    exact = Fraction(value) / (1 + Fraction(pct) / 100)
    rounded = int(exact + Fraction(1, 2))  # half away from zero, as Go's math.Round
    return max(rounded, 1)


@dataclass(frozen=True)
class Free:
    """What is left for new reservations: per node, per storage pool, ports and IPs."""

    nodes: Sequence[Node]
    node_free: Mapping[str, Capacity]
    storage: Mapping[str, int]
    node_ports: int
    ips: int


@dataclass(frozen=True)
class Placement:
    """Where a group went: node and pool usage, and the offer per resource unit."""

    nodes: dict[str, Capacity] = field(default_factory=dict)
    storage: dict[str, int] = field(default_factory=dict)
    node_ports: int = 0
    ips: int = 0
    allocated: tuple[ResourceOffer, ...] = ()


@dataclass(frozen=True)
class NoFit:
    code: str  # insufficient_capacity, insufficient_storage, gpu_unavailable, …
    reasons: tuple[str, ...]


def gpu_matches(requirement: str, model: GPUModel) -> bool:
    """Does a node GPU model satisfy ``vendor/<v>/model/<m>[/ram/<r>][/interface/<i>]``?"""
    parts = requirement.split("/")
    if len(parts) < 4 or parts[0] != "vendor" or parts[2] != "model":
        return False
    if parts[1] != model.vendor or not key_matches(parts[3], model.model):
        return False
    extra = dict(zip(parts[4::2], parts[5::2], strict=False))
    if "ram" in extra and extra["ram"] != model.memory:
        return False
    return "interface" not in extra or extra["interface"] == model.interface


def gpu_key(model: GPUModel) -> str:
    """The attribute key naming exactly ``model``."""
    key = f"vendor/{model.vendor}/model/{model.model}"
    if model.memory:
        key += f"/ram/{model.memory}"
    if model.interface:
        key += f"/interface/{model.interface}"
    return key


@dataclass(frozen=True)
class _Replica:
    need: Capacity
    classes: tuple[str, ...]  # persistent classes the node must support
    gpu_requirements: tuple[str, ...]


def _replica(resources: Resources, levels: CommitLevels) -> tuple[_Replica, dict[str, int]]:
    ram = ephemeral = 0
    persistent: dict[str, int] = {}
    for volume in resources.storage or ():
        size, cls = volume.size.val, volume.storage_class
        if cls == "ram":
            ram += size
        elif cls == "ephemeral":
            ephemeral += size
        else:
            persistent[cls] = persistent.get(cls, 0) + committed(size, levels.storage)
    need = Capacity(
        cpu=committed(resources.cpu_millis, levels.cpu),
        memory=committed(resources.memory_bytes, levels.memory) + ram,
        ephemeral=committed(ephemeral, levels.storage),
        gpu=resources.gpu_units,
    )
    gpu_reqs = tuple(a.key for a in (resources.gpu.attributes or ())) if resources.gpu else ()
    return _Replica(need, tuple(sorted(persistent)), gpu_reqs), persistent


def _node_problems(node: Node, free: Capacity, replica: _Replica) -> list[str]:
    problems = free.shortfall(replica.need)
    if replica.need.gpu and replica.gpu_requirements:
        model = node.gpu_model
        if model is None or not any(gpu_matches(r, model) for r in replica.gpu_requirements):
            problems.append("gpu model")
    missing = [c for c in replica.classes if c not in node.storage_classes]
    problems.extend(f"storage class {c}" for c in missing)
    return problems


def _unit_label(unit: ResourceUnit) -> str:
    return f"resource unit {unit.resource.id} ({unit.count} replica{'s' * (unit.count != 1)})"


def _offer(unit: ResourceUnit, model: GPUModel | None) -> ResourceOffer:
    resources = unit.resource
    if resources.gpu_units and model is not None:
        gpu = GPU(
            units=rv(resources.gpu_units), attributes=[Attribute(key=gpu_key(model), value="true")]
        )
        resources = resources.model_copy(update={"gpu": gpu})
    return ResourceOffer(resources=resources, count=unit.count)


def place(group: GroupSpec, free: Free, levels: CommitLevels = CommitLevels()) -> Placement | NoFit:
    """Place every replica of ``group`` on ``free`` capacity, or say why it does not fit."""
    node_free = dict(free.node_free)
    storage = dict(free.storage)
    used_nodes: dict[str, Capacity] = {}
    used_storage: dict[str, int] = {}
    offers: list[ResourceOffer] = []
    node_ports = sum(u.resource.endpoint_count(EndpointKind.RANDOM_PORT) for u in group.resources)
    ips = len(
        {
            ep.sequence_number
            for u in group.resources
            for ep in u.resource.endpoints or ()
            if ep.kind == EndpointKind.LEASED_IP
        }
    )
    invalid = [
        u.resource.id
        for u in group.resources
        if u.resource.cpu is None or u.resource.memory is None
    ]
    if invalid:
        return NoFit(
            "invalid_resources",
            tuple(
                f"resource unit {i} does not say how much CPU and memory it needs" for i in invalid
            ),
        )
    if ips > free.ips:
        return NoFit("insufficient_ips", (f"needs {ips} leased IP(s), {free.ips} free",))
    if node_ports > free.node_ports:
        return NoFit(
            "insufficient_node_ports", (f"needs {node_ports} node port(s), {free.node_ports} free",)
        )
    for unit in group.resources:
        replica, persistent = _replica(unit.resource, levels)
        models: set[GPUModel] = set()
        for index in range(unit.count):
            short = [
                f"{cls}: needs {size} bytes, {storage.get(cls, 0)} free"
                for cls, size in persistent.items()
                if storage.get(cls, 0) < size
            ]
            if short:
                return NoFit(
                    "insufficient_storage",
                    (f"{_unit_label(unit)}: persistent storage pool {'; '.join(short)}",),
                )
            chosen: Node | None = None
            report: list[str] = []
            for node in free.nodes:
                problems = _node_problems(node, node_free.get(node.name, Capacity()), replica)
                if not problems:
                    chosen = node
                    break
                report.append(f"{node.name}: {', '.join(problems)}")
            if chosen is None:
                code = (
                    "gpu_unavailable"
                    if all("gpu" in r for r in report) and report
                    else "insufficient_capacity"
                )
                where = "; ".join(report[:8]) or "the cluster has no nodes"
                return NoFit(
                    code,
                    (f"{_unit_label(unit)}: replica {index + 1} fits on no node ({where})",),
                )
            node_free[chosen.name] = node_free.get(chosen.name, Capacity()) - replica.need
            used_nodes[chosen.name] = used_nodes.get(chosen.name, Capacity()) + replica.need
            for cls, size in persistent.items():
                storage[cls] -= size
                used_storage[cls] = used_storage.get(cls, 0) + size
            if replica.need.gpu and chosen.gpu_model is not None:
                models.add(chosen.gpu_model)
        if len(models) > 1:
            names = ", ".join(sorted(gpu_key(m) for m in models))
            return NoFit(
                "gpu_unavailable",
                (f"{_unit_label(unit)}: replicas would run on different GPU models ({names})",),
            )
        offers.append(_offer(unit, next(iter(models), None)))
    return Placement(
        nodes=used_nodes,
        storage=used_storage,
        node_ports=node_ports,
        ips=ips,
        allocated=tuple(offers),
    )
