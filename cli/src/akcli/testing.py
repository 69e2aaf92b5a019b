"""The provider suite as real processes, for cross-service tests.

``Provider`` starts, on a devnet and a Redis of the test's own, kubesim running the nodes
below with the inventory operator (and the hostname and IP operators a test asks for), the
chain relay, a cluster service (``kube`` backend on kubesim, its inventory the inventory
operator's; or the ``null`` backend on the same nodes, without kubesim and operators), the
bid engine, the manifest service and the gateway (its certificate generated and published
on chain first), each as a subprocess, started together; with static ingress hosts under
``ingress.localhost``, so every HTTP service gets a URI once the hostname operator routes
it; tests read the chain (LCD), kubesim and the streams to see what they did.
``akash-provider run`` starts the same, with every operator.
:func:`frozen` pauses one of them (SIGSTOP … SIGCONT), to hold it still at a chosen moment.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from akbalance.testing import BalanceProcess
from akbidengine.testing import BidEngineProcess
from akbus import Bus
from akbus.embedded import EmbeddedRedis
from akchainsvc.testing import RelayProcess
from akcluster.testing import ClusterProcess
from akdevnet.tenant import ClientCertificate, Tenant
from akdevnet.testing import TEST_PASSPHRASE, DevnetProcess
from akgateway.testing import GatewayProcess
from akmanifest.testing import ManifestProcess
from akoperators.testing import KINDS as OPERATORS
from akoperators.testing import OperatorProcess
from akservice.testing import ServiceProcess, eventually
from aktypes.events import Envelope, envelope_from_fields
from aktypes.ids import LeaseID
from aktypes.sdl import SDL, parse_sdl
from kubesim.cluster import ClusterSpec
from kubesim.testing import KubeSimProcess

NODES = """
nodes:
  - {name: big-a, cpu: "64", memory: 256Gi, ephemeral-storage: 4Ti, storage-classes: [beta2]}
  - {name: big-b, cpu: "64", memory: 256Gi, ephemeral-storage: 4Ti, storage-classes: [beta2]}
  - name: gpu-a
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 2Ti
    storage-classes: [beta2]
    gpus: {vendor: nvidia, model: a100, count: 8, memory: 80Gi, interface: sxm}
"""

SCALES = {
    "AP_BID_PRICE_CPU_SCALE": "0.001",
    "AP_BID_PRICE_MEMORY_SCALE": "0.01",
    "AP_BID_PRICE_STORAGE_SCALE": "0.01,beta2=0.02",
    "AP_BID_PRICE_ENDPOINT_SCALE": "1",
    "AP_BID_PRICE_GPU_SCALE": "a100=50,*=40",
}


STARTUP_S = 60.0  # for each process of a suite started together to be ready
INGRESS_DOMAIN = "ingress.localhost"  # each HTTP service gets <26 characters>.ingress.localhost
GATEWAY_KUBE_SETTINGS = ("AP_CLUSTER_BACKEND", "AP_KUBECONFIG")  # for logs, events, shell


@dataclass
class Provider:
    """The provider's processes and what tests need to drive and watch them."""

    devnet: DevnetProcess
    redis_url: str
    tmp: Path
    bidengine_env: dict[str, str] = field(default_factory=dict)
    cluster_env: dict[str, str] = field(default_factory=dict)
    manifest_env: dict[str, str] = field(default_factory=dict)
    gateway_env: dict[str, str] = field(default_factory=dict)
    balance_env: dict[str, str] | None = None  # None: no balance service
    gateway_port: int | None = None  # default: a free port
    dashboard_port: int | None = None  # default: a free port
    dashboard_token: str = "dashboard-test-token"  # noqa: S105 - tests'; the suite makes one
    grpc_port: int | None = None  # default: a free port
    nodes: str = NODES
    storage: str = "beta2=8Ti"  # persistent storage pools, AP_INVENTORY_STORAGE's syntax
    backend: str = "kube"  # kubesim running `nodes` with the operators, or `null`: no cluster
    scales: dict[str, str] = field(default_factory=lambda: dict(SCALES))
    replicas: int = 1  # of the bid engine, manifest, balance and gateway (cluster: ``clusters``)
    # on kubesim, beside the inventory operator (always: the cluster's inventory is its):
    # "hostname" (Ingresses, so lease URIs), "ip" (leased IPs and their Services)
    operators: tuple[str, ...] = ()
    operator_env: dict[str, str] = field(default_factory=dict)
    kubesim_args: tuple[str, ...] = ()  # more flags of `kubesim serve` (--event-ttl 2s)
    ingress_domain: str = INGRESS_DOMAIN  # generated hostnames' ("": none, HTTP needs hosts)
    # the provider's on-chain attributes, written before the services start (None: the devnet's)
    attributes: dict[str, str] | None = None
    processes: dict[str, Any] = field(default_factory=dict)

    def start(self, *, clusters: int | None = None) -> Provider:
        if self.attributes is not None:
            self.devnet.set_provider_attributes(self.attributes)
        inventory = self.tmp / "nodes.yaml"
        inventory.write_text(self.nodes)
        cluster_env = {**self.ingress_env(), "AP_API": self.devnet.lcd_url, **self.cluster_env}
        if self.backend == "kube":
            kube = KubeSimProcess(
                self.tmp / "kubesim", None, "--nodes", str(inventory), *self.kubesim_args
            )
            self.processes["kubesim"] = kube
            cluster_env = {
                "AP_CLUSTER_BACKEND": "kube",
                "AP_KUBECONFIG": str(kube.kubeconfig.resolve()),
                **cluster_env,
            }
            self._operators(kube, ClusterSpec.load(inventory))
        else:
            pools = dict(p.split("=") for p in self.storage.split(",") if p)
            inventory.write_text(self.nodes + "\n" + yaml.safe_dump({"storage": pools}))
        self.processes["relay"] = RelayProcess(
            redis_url=self.redis_url,
            node=self.devnet.rpc_url,
            api=self.devnet.lcd_url,
            key_file=self.devnet.key_path("provider"),
            passphrase=TEST_PASSPHRASE,
            log_path=self.tmp / "relay.log",
        )
        for i in range(self.replicas if clusters is None else clusters):
            self.processes[f"cluster-{i}"] = ClusterProcess(
                redis_url=self.redis_url,
                log_path=self.tmp / f"cluster-{i}.log",
                inventory_file=inventory,
                instance=str(i),
                extra_env=cluster_env,
            )
        for i, name in self._replicas("bidengine"):
            self.processes[name] = BidEngineProcess(
                redis_url=self.redis_url,
                api=self.devnet.lcd_url,
                log_path=self.tmp / f"{name}.log",
                extra_env={**self.scales, **self.bidengine_env, "AP_INSTANCE_ID": str(i)},
            )
        for i, name in self._replicas("balance") if self.balance_env is not None else ():
            self.processes[name] = BalanceProcess(
                redis_url=self.redis_url,
                api=self.devnet.lcd_url,
                node=self.devnet.rpc_url,
                log_path=self.tmp / f"{name}.log",
                extra_env={**(self.balance_env or {}), "AP_INSTANCE_ID": str(i)},
            )
        for i, name in self._replicas("manifest"):
            self.processes[name] = ManifestProcess(
                redis_url=self.redis_url,
                api=self.devnet.lcd_url,
                log_path=self.tmp / f"{name}.log",
                extra_env={**self.ingress_env(), **self.manifest_env, "AP_INSTANCE_ID": str(i)},
            )
        simulator = self.processes.get("kubesim")
        if simulator is not None:
            simulator.start()  # first: the others read the kubeconfig it writes
        starting = [p for p in self.processes.values() if p is not simulator]
        for process in starting:  # together, then each waited for
            process.start(wait_ready=False)
        for process in starting:  # a dozen processes starting at once share the machine
            process.wait_ready(timeout=STARTUP_S)
        kube_env = {k: v for k, v in cluster_env.items() if k in GATEWAY_KUBE_SETTINGS}
        gateways = [
            GatewayProcess(
                redis_url=self.redis_url,
                api=self.devnet.lcd_url,
                tls_dir=self.tmp / "gateway-tls",  # one certificate, shared by the replicas
                log_path=self.tmp / f"{name}.log",
                port=self.gateway_port if i == 0 else None,
                dashboard_port=self.dashboard_port if i == 0 else None,
                dashboard_token=self.dashboard_token,
                grpc_port=self.grpc_port if i == 0 else None,
                extra_env={
                    "AP_GATEWAY_REQUEST_TIMEOUT": "10s",
                    "AP_GATEWAY_SUBMIT_TIMEOUT": "60s",
                    **kube_env,
                    **self.gateway_env,
                    "AP_INSTANCE_ID": str(i),
                },
            )
            for i, name in self._replicas("gateway")
        ]
        gateways[0].certify()  # the provider's certificate, on chain
        for (_, name), gateway in zip(self._replicas("gateway"), gateways, strict=True):
            self.processes[name] = gateway
            gateway.start()
        return self

    def ingress_env(self) -> dict[str, str]:
        """Static ingress hosts for the cluster (which makes them) and the manifest service
        (which refuses HTTP exposes without hostnames when there are none)."""
        return {
            "AP_DEPLOYMENT_INGRESS_STATIC_HOSTS": "true" if self.ingress_domain else "false",
            "AP_DEPLOYMENT_INGRESS_DOMAIN": self.ingress_domain,
        }

    def _operators(self, kube: KubeSimProcess, cluster: ClusterSpec) -> None:
        """The inventory operator, knowing the nodes' GPUs (:func:`gpu_registry`), and the
        other operators asked for, on kubesim; ``operator_env`` comes last."""
        registry = self.tmp / "gpus.yaml"
        registry.write_text(gpu_registry(cluster))
        for kind in (k for k in OPERATORS if k == "inventory" or k in self.operators):
            self.processes[f"{kind}-operator"] = OperatorProcess(
                kind,
                redis_url=self.redis_url,
                log_path=self.tmp / f"{kind}-operator.log",
                kubeconfig=kube.kubeconfig.resolve(),
                env={
                    "AP_INVENTORY_STORAGE": self.storage,
                    "AP_INVENTORY_GPU_REGISTRY": str(registry),
                    **self.operator_env,
                },
            )

    def operator(self, kind: str) -> OperatorProcess:
        process: OperatorProcess = self.processes[f"{kind}-operator"]
        return process

    def _replicas(self, service: str) -> list[tuple[int, str]]:
        """``(index, process name)`` of each replica: ``service``, ``service-1``, …"""
        return [(i, service if i == 0 else f"{service}-{i}") for i in range(self.replicas)]

    def replicas_of(self, service: str) -> list[ServiceProcess]:
        """Every replica of ``service`` (``cluster``: every cluster process)."""
        return [
            p
            for name, p in self.processes.items()
            if name.startswith(f"{service}-") or name == service
        ]

    @property
    def gateway(self) -> GatewayProcess:
        process: GatewayProcess = self.processes["gateway"]
        return process

    @property
    def manifest(self) -> ManifestProcess:
        process: ManifestProcess = self.processes["manifest"]
        return process

    @property
    def bidengine(self) -> BidEngineProcess:
        process: BidEngineProcess = self.processes["bidengine"]
        return process

    @property
    def balance(self) -> BalanceProcess:
        process: BalanceProcess = self.processes["balance"]
        return process

    @property
    def relay(self) -> RelayProcess:
        process: RelayProcess = self.processes["relay"]
        return process

    @property
    def kubesim(self) -> KubeSimProcess:
        process: KubeSimProcess = self.processes["kubesim"]
        return process

    def cluster(self, index: int = 0) -> ClusterProcess:
        process: ClusterProcess = self.processes[f"cluster-{index}"]
        return process

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            with contextlib.suppress(Exception):
                process.stop()


def gpu_registry(cluster: ClusterSpec) -> str:
    """A GPU registry (``AP_INVENTORY_GPU_REGISTRY``) naming the GPUs of kubesim's nodes that
    carry Akash's labels, as their spec names them. kubesim gives those nodes the model as
    their product name (``nvidia.com/gpu.product: a100``), which no real discovery reports
    and so no bundled entry matches; nodes without Akash's labels carry real product names
    (``NVIDIA-A100-SXM4-80GB``), which the bundled registry names."""
    entries: list[dict[str, Any]] = []
    for node in cluster.nodes:
        gpus = node.gpus
        if gpus is None or not node.akash_labels:
            continue
        entry: dict[str, Any] = {
            "vendor": gpus.vendor,
            "model": gpus.model,
            "memory": gpus.memory or "",
            "products": [gpus.product or gpus.model],
        }
        if gpus.interface:
            entry["interface"] = gpus.interface
        if entry not in entries:
            entries.append(entry)
    return yaml.safe_dump({"version": "v1", "gpus": entries}, sort_keys=False)


@contextlib.contextmanager
def whole_suite(tmp: Path, *, block_time: str = "20ms", **options: Any) -> Iterator[Provider]:
    """One provider for a whole test module (a devnet and a Redis of its own, the relay,
    kubesim, every service, the gateway) in ``tmp``, started with ``options``
    (:class:`Provider`'s fields)."""
    with (
        tempfile.TemporaryDirectory(prefix="s", dir="/tmp") as sock_dir,  # short socket path
        EmbeddedRedis(Path(sock_dir), aof=False) as redis,
        DevnetProcess(tmp / "devnet", block_time=block_time) as devnet,
    ):
        provider = Provider(devnet, redis.url, tmp, **options)
        try:
            yield provider.start()
        finally:
            provider.stop()


@contextlib.contextmanager
def frozen(process: ServiceProcess) -> Iterator[None]:
    """``process`` stopped (SIGSTOP) for the block: it holds what it has read and does
    nothing. It runs on (SIGCONT) after the block, unless it was killed meanwhile."""
    pid = process.pid
    if pid is None:
        raise RuntimeError(f"{process.name} is not running")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        if process.running() and process.pid == pid:
            os.kill(pid, signal.SIGCONT)


async def stream(bus: Bus, name: str) -> list[Envelope[Any]]:
    return [envelope_from_fields(e.fields) for e in await bus.backend.entries(name)]


def sdl_text(
    *,
    cpu: float = 1,
    memory: str = "512Mi",
    storage: str = "1Gi",
    count: int = 1,
    gpu: str = "",
    attributes: str = "",
    signed_by: str = "",
) -> str:
    """A one-service SDL (uact, max 100 000 per block); the arguments ask for what a test
    needs: a GPU ``model``, placement ``attributes: {…}``, ``signedBy: {…}``."""
    gpu_block = (
        f"""
        gpu:
          units: 1
          attributes:
            vendor:
              nvidia:
                - model: {gpu}"""
        if gpu
        else ""
    )
    return f"""
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        to:
          - global: true
profiles:
  compute:
    web:
      resources:
        cpu:
          units: {cpu}
        memory:
          size: {memory}
        storage:
          size: {storage}{gpu_block}
  placement:
    dc:
      {attributes or "attributes: {host: akash}"}
      {signed_by}
      pricing:
        web:
          denom: uact
          amount: 100000
deployment:
  web:
    dc:
      profile: web
      count: {count}
"""


def sdl(**asked: Any) -> SDL:
    """:func:`sdl_text`, parsed."""
    return parse_sdl(sdl_text(**asked))


# -- a tenant's path through the suite --------------------------------------------------


async def certified(tenant: Tenant, provider: Provider) -> ClientCertificate:
    """A client certificate on chain that the gateway already trusts."""
    certificate = await tenant.create_certificate()

    async def works() -> int:
        try:
            status, _ = await tenant.gateway_request(
                "GET", f"{provider.gateway.url}/lease/1/1/1/status", certificate=certificate
            )
        except aiohttp.ClientError:
            return 0  # not in the gateway's trust store yet: refused in the handshake
        return status

    def not_found(status: int) -> bool:  # the lease does not exist: the certificate worked
        return status == 404

    await eventually(works, timeout_s=30, what="the certificate trusted", until=not_found)
    return certificate


DSEQS = itertools.count(100_000)  # deployments made at once need dseqs of their own


async def leased(provider: Provider, tenant: Tenant, shape: SDL) -> list[LeaseID]:
    """``shape`` deployed by ``tenant``, bid on by the provider and accepted: its leases."""
    me = provider.devnet.signer("provider").address
    deployment = await tenant.deploy(shape, dseq=next(DSEQS))
    groups = len(shape.groups)

    async def bids() -> Any:
        found = await tenant.bids(deployment.dseq, provider=me)
        return found if len(found) == groups else None

    await eventually(bids, timeout_s=90, what=f"our bids on {deployment.dseq}")
    return await tenant.accept(deployment.dseq, me)


async def lease_status(
    provider: Provider, tenant: Tenant, lease: LeaseID, certificate: ClientCertificate
) -> tuple[int, Any]:
    """The gateway's answer to the tenant's ``GET /lease/…/status``: (status, body)."""
    return await tenant.lease_status(
        lease.dseq, lease.gseq, lease.oseq, provider.gateway.url, certificate
    )


def running(shape: SDL, lease: LeaseID) -> Callable[[tuple[int, Any]], bool]:
    """Whether a lease status answer shows every service of the lease's group available."""
    group = next(g for g in shape.manifest.groups if g.name == shape.groups[lease.gseq - 1].name)

    def check(answer: tuple[int, Any]) -> bool:
        status, body = answer
        if status != 200:
            return False
        services = body["services"]
        return all(
            s.name in services and services[s.name]["available"] >= s.count
            for s in group.services or ()
        )

    return check


async def flow(
    provider: Provider, tenant: Tenant, certificate: ClientCertificate, shape: SDL, name: str
) -> dict[str, Any]:
    """A tenant's whole path for ``shape``: leased, manifest sent through the gateway, every
    service available; ``{"name", "leases", "reports" (lease → status body), "shape"}``."""
    leases = await leased(provider, tenant, shape)
    dseq = leases[0].dseq
    me = provider.devnet.signer("provider").address
    status, answer = await tenant.send_manifest_answer(
        dseq, shape, provider.gateway.url, certificate=certificate, provider=me
    )
    if status != 200:
        raise AssertionError(f"{name}: the manifest was refused: {status} {answer}")
    reports = {}
    for lease in leases:

        async def answer_of(lease: LeaseID = lease) -> tuple[int, Any]:
            return await lease_status(provider, tenant, lease, certificate)

        _, body = await eventually(
            answer_of,
            timeout_s=90,
            what=f"{name}: every service of {lease} available",
            until=running(shape, lease),
        )
        reports[lease] = body
    return {"name": name, "leases": leases, "reports": reports, "shape": shape}
