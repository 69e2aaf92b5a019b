"""Onboarding an existing cluster: check that it can run the provider, then set it up.

:func:`onboard` asks the API server, as the kubeconfig's user, everything the provider
needs: that it answers and runs Kubernetes 1.27 or newer, and — one
SelfSubjectAccessReview each — every permission of the provider's RBAC
(:mod:`akoperators.domain.onboard`). When anything is missing it says what and changes
nothing. Otherwise it installs or upgrades Akash's CRDs (waiting until they are served),
makes the provider's namespaces, labels the nodes as the inventory operator would (its
own discovery: :func:`node_labeller`; labels are added, never removed), seals
the kubeconfig with the vault (:mod:`akservice.secrets`) so the services can open it, and
reports the nodes, GPUs, storage classes and what the provider would run without (no
ingress class, no storage class, no MetalLB). :func:`check` asks the same, read-only.
Each step is idempotent: a second run changes nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from akkube.calls import resource_path
from akkube.client import ConfigException
from akoperators.adapters.kube import Kube, Obj
from akoperators.domain.inventory import InventoryConfig, discover
from akoperators.domain.onboard import (
    LABELLING_NEEDS,
    METALLB_CRD,
    MIN_VERSION,
    NAMESPACES,
    ONBOARDING_NEEDS,
    Gpus,
    NodeSummary,
    Permission,
    Report,
    namespace_object,
    required_permissions,
    server_version,
    storage_class_names,
    summarize_node,
    warnings_for,
)
from akoperators.errors import KubeError
from akoperators.inventory.registry import bundled
from akservice.secrets import KUBECONFIG, Vault

CRDS = resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions")
NAMESPACE_PATH = resource_path("v1", "namespaces")
NODES = resource_path("v1", "nodes")
STORAGE_CLASSES = resource_path("storage.k8s.io/v1", "storageclasses")
INGRESS_CLASSES = resource_path("networking.k8s.io/v1", "ingressclasses")
REVIEWS_AT_ONCE = 16
ESTABLISHED_TIMEOUT_S = 60.0

Labeller = Callable[[Obj], Mapping[str, str]]


def provider_rbac() -> list[Obj]:
    """The provider's RBAC (``k8s/rbac.yaml``, shipped in the package)."""
    text = resources.files("akoperators").joinpath("data/rbac.yaml").read_text()
    return [doc for doc in yaml.safe_load_all(text) if doc]


def node_labeller(config: InventoryConfig | None = None) -> Labeller:
    """The labels the inventory operator gives a node: its discovery on the node alone,
    with the bundled GPU registry and ``config`` (storage classes come from its pools)."""
    settings, gpus = config or InventoryConfig(), bundled()

    def labels(node: Obj) -> Mapping[str, str]:
        found = discover([node], [], [], [], config=settings, registry=gpus)
        return found.labels.get(str(node["metadata"]["name"]), {})

    return labels


async def onboard(
    kubeconfig: Path,
    crds: Sequence[Obj],
    *,
    vault: Vault | None = None,
    rbac: Sequence[Obj] | None = None,
    labeller: Labeller | None = None,
) -> Report:
    """Check the cluster; when it has all the provider needs, set it up (see the module).
    ``vault``: where to seal the kubeconfig (None: not stored). ``labeller``: defaults to
    :func:`node_labeller`."""
    return await _run(kubeconfig, crds, vault, rbac, labeller or node_labeller(), check=False)


async def check(
    kubeconfig: Path,
    crds: Sequence[Obj],
    *,
    rbac: Sequence[Obj] | None = None,
    labeller: Labeller | None = None,
) -> Report:
    """The same checks, read-only: CRDs, namespaces or labels not in place are reported
    as missing (``onboard`` would make them)."""
    return await _run(kubeconfig, crds, None, rbac, labeller or node_labeller(), check=True)


async def _run(
    kubeconfig: Path,
    crds: Sequence[Obj],
    vault: Vault | None,
    rbac: Sequence[Obj] | None,
    labeller: Labeller | None,
    *,
    check: bool,
) -> Report:
    try:
        kube = Kube.from_kubeconfig(kubeconfig, timeout_s=15.0)
    except (ConfigException, OSError, ValueError, yaml.YAMLError) as exc:
        report = Report(server=str(kubeconfig), check_only=check)
        report.problems.append(f"the kubeconfig {kubeconfig} does not load: {exc}")
        return report
    try:
        report = Report(server=str(kube.client.configuration.host), check_only=check)
        if not await _reachable(kube, report):
            return report
        extra = [*ONBOARDING_NEEDS, *(LABELLING_NEEDS if labeller else ())]
        wanted = required_permissions(provider_rbac() if rbac is None else rbac, extra)
        report.checked = len(wanted)
        report.missing = await _missing(kube, wanted)
        await _survey(kube, report)
        if not report.complete:
            return report  # change nothing
        if check:
            await _verify(kube, report, crds, labeller)
        else:
            try:
                await _install(kube, report, crds)
                await _label(kube, report, labeller)
            except KubeError as exc:  # what was done stays done; a new run goes on from there
                report.problems.append(f"setting the cluster up failed: {exc}")
                return report
            if vault is not None:
                report.sealed.append(str(vault.seal_file(KUBECONFIG, kubeconfig)))
        return report
    finally:
        kube.close()


async def _reachable(kube: Kube, report: Report) -> bool:
    try:
        version = await kube.request("GET", "/version")
    except KubeError as exc:
        if exc.status == 401:
            report.problems.append("the API server refused the kubeconfig's credentials (401)")
        else:
            report.problems.append(f"the API server does not answer: {exc}")
        return False
    major, minor = server_version(version)
    report.version = str(version.get("gitVersion") or f"{major}.{minor}")
    if (major, minor) < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        report.problems.append(
            f"Kubernetes {major}.{minor} is too old: the provider needs {need} or newer"
        )
    try:  # who we are, where the server says (authentication.k8s.io/v1, 1.28+)
        review = await kube.request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        report.user = str(((review.get("status") or {}).get("userInfo") or {}).get("username", ""))
    except KubeError:
        pass  # an older server, or not allowed: the report goes without the name
    return not report.problems


async def _missing(kube: Kube, wanted: Sequence[Permission]) -> list[Permission]:
    gate = asyncio.Semaphore(REVIEWS_AT_ONCE)

    async def allowed(p: Permission) -> bool:
        async with gate:
            return await kube.access_review(
                p.verb, p.group, p.resource, namespace=p.namespace or None, name=p.name or None
            )

    answers = await asyncio.gather(*(allowed(p) for p in wanted))
    return [p for p, ok in zip(wanted, answers, strict=True) if not ok]


async def _survey(kube: Kube, report: Report) -> None:
    """Nodes, storage classes and what the provider would do without (reads only)."""
    nodes = await _listed(kube, NODES, report, "nodes")
    report.nodes = [_summary(n) for n in nodes or []]
    classes = await _listed(kube, STORAGE_CLASSES, report, "storage classes")
    report.storage_classes = storage_class_names(classes or [])
    ingress = await _listed(kube, INGRESS_CLASSES, report, "ingress classes")
    metallb = await _read(kube, f"{CRDS}/{METALLB_CRD}", report, "MetalLB's CRD")
    if nodes is not None and classes is not None:
        report.warnings += warnings_for(
            report.nodes,
            report.storage_classes,
            [i["metadata"]["name"] for i in ingress or []] if ingress is not None else [],
            metallb is not None,
        )


def _summary(node: Obj) -> NodeSummary:
    """The node as the report shows it, its GPUs named as the inventory operator names
    them (an unknown model says so, with the product feature discovery reports)."""
    summary = summarize_node(node)
    offered = discover([node], [], [], [], config=InventoryConfig(), registry=bundled())
    if not offered.cluster.nodes:
        return summary  # not ready or cordoned: not offered, as the labels say
    gpus = tuple(
        Gpus(g.vendor, g.model if g.known else f"{g.model} (unknown model: {g.product})", g.count)
        for g in offered.cluster.nodes[0].gpus
    )
    return dataclasses.replace(summary, gpus=gpus or summary.gpus)


async def _listed(kube: Kube, path: str, report: Report, what: str) -> list[Obj] | None:
    try:
        return await kube.list(path)
    except KubeError as exc:
        report.warnings.append(f"cannot read {what}: {exc}")
        return None


async def _read(kube: Kube, path: str, report: Report, what: str) -> Obj | None:
    try:
        return await kube.get(path)
    except KubeError as exc:
        report.warnings.append(f"cannot read {what}: {exc}")
        return None


async def _install(kube: Kube, report: Report, crds: Sequence[Obj]) -> None:
    for crd in crds:
        name = crd["metadata"]["name"]
        report.crds[name] = await kube.ensure(CRDS, crd, owned=["spec"])
    for crd in crds:
        await _established(kube, crd["metadata"]["name"])
    for name in NAMESPACES:
        report.namespaces[name] = await kube.ensure(
            NAMESPACE_PATH, namespace_object(name), owned=[]
        )


async def _established(kube: Kube, name: str) -> None:
    deadline = time.monotonic() + ESTABLISHED_TIMEOUT_S
    while True:
        crd = await kube.get(f"{CRDS}/{name}") or {}
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise KubeError(0, f"CRD {name} was not established in {ESTABLISHED_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.2)


async def _label(kube: Kube, report: Report, labeller: Labeller | None) -> None:
    if labeller is None:
        report.labelling = "left to the inventory operator"
        return
    for node in await kube.list(NODES):
        name = node["metadata"]["name"]
        labels = dict(labeller(node))
        if _has_labels(node, labels):
            report.labels[name] = "unchanged"
            continue
        await kube.patch(f"{NODES}/{name}", {"metadata": {"labels": labels}})
        report.labels[name] = "labelled"


async def _verify(
    kube: Kube, report: Report, crds: Sequence[Obj], labeller: Labeller | None
) -> None:
    """What onboarding would still have to do, as problems (``check``)."""
    for crd in crds:
        name = crd["metadata"]["name"]
        state = await kube.drift(CRDS, crd, owned=["spec"])
        report.crds[name] = "installed" if state == "unchanged" else _said(state)
        if state != "unchanged":
            report.problems.append(f"CRD {name} is {_said(state)}")
    for name in NAMESPACES:
        state = await kube.drift(NAMESPACE_PATH, namespace_object(name), owned=[])
        report.namespaces[name] = "present" if state != "missing" else "missing"
        if state == "missing":
            report.problems.append(f"namespace {name} is missing")
    if labeller is None:
        report.labelling = "not checked: left to the inventory operator"
        return
    for node in await kube.list(NODES):
        name = node["metadata"]["name"]
        labelled = _has_labels(node, labeller(node))
        report.labels[name] = "labelled" if labelled else "not labelled"
        if not labelled:
            report.problems.append(f"node {name} lacks the inventory's labels")


def _has_labels(node: Obj, labels: Mapping[str, Any]) -> bool:
    have = (node.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _said(state: str) -> str:
    return {"missing": "not installed", "differs": "out of date"}.get(state, state)
