"""Acceptance: Akash's public SDL templates become objects Kubernetes 1.32 accepts.

Every group of every valid template of ``libs/aktypes/tests/data/awesome-akash`` (the eight
templates Akash itself refuses are the only ones skipped) is built into all of its objects,
with a plausible reservation (a concrete GPU model where the SDL says ``*``), together with
the Ingresses the hostname operator makes of its ProviderHosts, and each object is checked
the way the API server would check it:

- built-in kinds against Kubernetes 1.32's OpenAPI schemas in strict mode (unknown fields
  are errors), from the ``kubernetes-validate`` package, then by kubesim's checks of what the
  server adds to the schema (names, labels, annotations, selectors, ports), then by what
  neither checks but the server refuses (volume mounts, port names, node selector keys,
  requests above limits, Ingress backends);
- Manifest and ProviderHost resources against our CRDs' ``openAPIV3Schema``, with nothing
  pruned (what the CRD does not declare would be lost);
- the CRDs themselves as ``apiextensions.k8s.io/v1`` objects.

Then the CRDs, a lease's objects and its custom resources go through kubesim with the
official ``kubernetes`` client, and the Manifest read back gives the same group.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterator
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kubernetes import client, config, utils
from referencing import Registry, Resource

from akcluster.domain.objects import (
    BuildSettings,
    crds,
    group_from_manifest_object,
    lease_objects,
    manifest_object,
    provider_host_objects,
    scheduler_params,
)
from akcluster.domain.placement import CommitLevels
from akoperators.domain.hosts import InvalidHost, http_options, ingress, route_of
from aktypes.attributes import Attribute
from aktypes.errors import SDLError
from aktypes.events import ResourceOffer
from aktypes.groupspec import GroupSpec
from aktypes.ids import LeaseID
from aktypes.manifest import Group, ImageCredentials, ServiceParams, ServicePermissions
from aktypes.resources import GPU
from aktypes.sdl import SDL, parse_sdl
from aktypes.testing import address
from kubesim import crd as kcrd
from kubesim.catalog import BUILTIN
from kubesim.validation import check_builtin, is_dns_label, is_dns_subdomain, label_causes

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
REJECTED = {  # broken as published; aktypes' corpus test pins why
    "teamspeak.yaml",
    "Venice-ElizaOS.yaml",
    "axolotlai.yaml",
    "codex.yaml",
    "minio.yaml",
    "pokt-network.yaml",
    "postgres-s3-backup.yaml",
    "steamcmd.yaml",
}
K8S = "1.32"
LEASE = LeaseID(owner=address(1), dseq=1_234_567, gseq=1, oseq=1, provider=address(2))
SETTINGS = BuildSettings(
    public_hostname="provider.example.com",
    pull_secret="registry-creds",
    runtime_class="gvisor",
    api_server_endpoints=(("10.96.0.1", 6443), ("fd00::1", 6443)),
)
LEVELS = CommitLevels(cpu=Decimal(50), memory=Decimal(25), storage=Decimal(10))
CONCRETE_GPU = "rtx4090"
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# -- the corpus --------------------------------------------------------------------------------
@functools.cache
def corpus() -> dict[str, SDL | SDLError]:
    results: dict[str, SDL | SDLError] = {}
    for path in sorted(CORPUS.glob("*.yaml")):
        try:
            results[path.name] = parse_sdl(path.read_bytes())
        except SDLError as exc:
            results[path.name] = exc
    return results


def allocation(spec: GroupSpec) -> list[ResourceOffer]:
    """What a reservation would record: a concrete GPU model for each GPU unit."""
    offers = []
    for unit in spec.resources:
        resources = unit.resource
        if resources.gpu_units and resources.gpu and resources.gpu.attributes:
            parts = resources.gpu.attributes[0].key.split("/")
            if parts[3] == "*":
                parts[3] = CONCRETE_GPU
            gpu = GPU(
                units=resources.gpu.units, attributes=[Attribute(key="/".join(parts), value="true")]
            )
            resources = resources.model_copy(update={"gpu": gpu})
        offers.append(ResourceOffer(resources=resources, count=unit.count))
    return offers


def with_credentials_and_permissions(group: Group) -> Group:
    """The group as if every service pulled from a private registry and read its logs (no
    template does both)."""
    services = []
    for service in group.services or ():
        params = service.params or ServiceParams()
        services.append(
            service.model_copy(
                update={
                    "credentials": ImageCredentials(
                        host="registry.example.com", username="me", password="<p&ss>"
                    ),
                    "params": params.model_copy(
                        update={"permissions": ServicePermissions(read=["logs", "events"])}
                    ),
                }
            )
        )
    return group.model_copy(update={"services": services})


def groups() -> Iterator[tuple[str, GroupSpec, Group]]:
    """Every group of every valid template, and each again with credentials and permissions."""
    for name, result in corpus().items():
        if isinstance(result, SDL):
            for spec, group in zip(result.groups, result.manifest.groups, strict=True):
                yield f"{name}:{group.name}", spec, group
                yield f"{name}:{group.name}+", spec, with_credentials_and_permissions(group)


# -- checks ------------------------------------------------------------------------------------
@functools.cache
def _schema_dir() -> Any:
    return resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", f"v{K8S}.0-local-strict"
    )


@functools.cache
def _registry() -> Registry[Any]:
    definitions = json.loads(_schema_dir().joinpath("_definitions.json").read_text())
    return Resource.from_contents(definitions) @ Registry()


@functools.cache
def strict_validator(kind: str, api_version: str) -> jsonschema.Validator:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = json.loads(_schema_dir().joinpath(f"{kind.lower()}-{group_version}.json").read_text())
    return jsonschema.Draft202012Validator(
        schema, registry=Resource.from_contents(schema) @ _registry()
    )


RTYPES = {(t.kind, t.api_version): t for t in BUILTIN}


def _pod_problems(pod: dict[str, Any], claims: list[str]) -> list[str]:
    found: list[str] = []
    volumes = {v["name"] for v in pod.get("volumes", ())} | set(claims)
    found += [f"volume {v} is not a DNS label" for v in volumes if not is_dns_label(v)]
    for term in pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]:
        for expr in term["matchExpressions"]:
            found += [c[2] for c in label_causes({expr["key"]: ""})]
    for container in pod["containers"]:
        found += [
            f"mount {m['name']} has no volume"
            for m in container.get("volumeMounts", ())
            if m["name"] not in volumes
        ]
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        for resource, amount in requests.items():
            if utils.parse_quantity(amount) > utils.parse_quantity(limits.get(resource, amount)):
                found.append(f"{resource} request {amount} > limit {limits[resource]}")
        for resource in ("nvidia.com/gpu", "amd.com/gpu"):
            if resource in limits and requests.get(resource) != limits[resource]:
                found.append(f"{resource}: request != limit")
    return found


def builtin_problems(obj: dict[str, Any]) -> list[str]:
    found = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in strict_validator(obj["kind"], obj["apiVersion"]).iter_errors(obj)
    ]
    rtype = RTYPES[(obj["kind"], obj["apiVersion"])]
    found += [f"{field}: {message}" for field, _, message in check_builtin(rtype, obj, K8S)]
    spec = obj.get("spec") or {}
    if obj["kind"] in ("Deployment", "StatefulSet"):
        found += [c[2] for c in label_causes(spec["template"]["metadata"]["labels"])]
        claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", ())]
        found += _pod_problems(spec["template"]["spec"], claims)
    if obj["kind"] == "Service":
        found += [
            f"port name {p['name']}" for p in spec["ports"] if not _PORT_NAME.match(p["name"])
        ]
    if obj["kind"] == "Ingress":
        found += [f"host {r['host']}" for r in spec["rules"] if not is_dns_subdomain(r["host"])]
    return found


def operator_ingresses(hosts: list[dict[str, Any]], manifest: dict[str, Any]) -> list[Any]:
    """The Ingresses the hostname operator makes of a lease's ProviderHosts (none for a
    hostname it refuses, such as a template's ``https``: it reports those invalid)."""
    found = []
    for host in hosts:
        try:
            route = route_of(host["spec"], host["metadata"]["name"])
        except InvalidHost:
            continue
        options = http_options(manifest, route)
        labels = host["metadata"]["labels"]
        found.append(
            ingress(route, options, ingress_class="akash-ingress-class", lease_labels=labels)
        )
    return found


def _ingress_backends_exist(objects: list[dict[str, Any]]) -> list[str]:
    ports = {
        (o["metadata"]["name"], p["port"])
        for o in objects
        if o["kind"] == "Service"
        for p in o["spec"]["ports"]
    }
    return [
        f"ingress {o['metadata']['name']} → {b['name']}:{b['port']['number']} has no Service port"
        for o in objects
        if o["kind"] == "Ingress"
        for b in [o["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]]
        if (b["name"], b["port"]["number"]) not in ports
    ]


@functools.cache
def crd_schemas() -> dict[str, dict[str, Any]]:
    """Storage version's schema of each CRD, by kind."""
    found = {}
    for definition in crds():
        version = next(v for v in definition["spec"]["versions"] if v["storage"])
        found[definition["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return found


@functools.cache
def crd_validator(kind: str) -> jsonschema.Validator:
    schema = kcrd.to_json_schema(crd_schemas()[kind])
    return jsonschema.Draft7Validator(schema)


def custom_problems(obj: dict[str, Any]) -> list[str]:
    schema = crd_schemas()[obj["kind"]]
    _, dropped = kcrd.prune(obj, schema)
    found = [f"pruned: {path}" for path in dropped]
    found += [e.message for e in crd_validator(obj["kind"]).iter_errors(obj)]
    meta = obj["metadata"]
    if not is_dns_subdomain(meta["name"]):
        found.append(f"name {meta['name']}")
    found += [c[2] for c in label_causes(meta["labels"])]
    return found


# -- tests -------------------------------------------------------------------------------------
def test_only_the_known_broken_templates_are_skipped() -> None:
    rejected = {name for name, result in corpus().items() if isinstance(result, SDLError)}
    assert len(corpus()) == 342
    assert rejected == REJECTED


def test_every_template_builds_valid_kubernetes_objects() -> None:
    started = time.monotonic()
    problems: dict[str, list[str]] = {}
    built: dict[str, int] = {}
    for where, spec, group in groups():
        params = scheduler_params(group, allocation(spec))
        manifest = manifest_object(LEASE, group, "0" * 64, settings=SETTINGS, params=params)
        hosts = provider_host_objects(LEASE, group, settings=SETTINGS)
        objects = [
            *lease_objects(LEASE, group, "0" * 64, settings=SETTINGS, levels=LEVELS, params=params),
            *operator_ingresses(hosts, manifest),
        ]
        custom = [manifest, *hosts]
        for obj in objects:
            built[obj["kind"]] = built.get(obj["kind"], 0) + 1
            for problem in builtin_problems(obj):
                problems.setdefault(where, []).append(
                    f"{obj['kind']} {obj['metadata']['name']}: {problem}"
                )
        for problem in _ingress_backends_exist(objects):
            problems.setdefault(where, []).append(problem)
        for obj in custom:
            built[obj["kind"]] = built.get(obj["kind"], 0) + 1
            for problem in custom_problems(obj):
                problems.setdefault(where, []).append(
                    f"{obj['kind']} {obj['metadata']['name']}: {problem}"
                )
        again = group_from_manifest_object(custom[0])
        if again != (LEASE, group, "0" * 64):
            problems.setdefault(where, []).append("Manifest resource does not round-trip")
    assert problems == {}
    # every kind is exercised, and the corpus is large enough to mean something
    assert set(built) == {
        "Namespace", "NetworkPolicy", "ServiceAccount", "Role", "RoleBinding", "Secret",
        "Deployment", "StatefulSet", "Service", "Ingress", "Manifest", "ProviderHost",
    }  # fmt: skip
    assert built["Namespace"] == 2 * sum(
        len(r.groups) for r in corpus().values() if isinstance(r, SDL)
    )
    assert time.monotonic() - started < 60


def test_crds_are_valid_custom_resource_definitions() -> None:
    definitions = crds()
    assert [d["metadata"]["name"] for d in definitions] == [
        "manifests.akash.network",
        "providerhosts.akash.network",
        "providerleasedips.akash.network",
    ]
    for definition in definitions:
        errors = list(
            strict_validator("CustomResourceDefinition", "apiextensions.k8s.io/v1").iter_errors(
                definition
            )
        )
        assert errors == [], definition["metadata"]["name"]
        assert kcrd.check_crd(definition) == [], definition["metadata"]["name"]
        assert definition["spec"]["group"] == "akash.network"
        versions = {v["name"]: (v["served"], v["storage"]) for v in definition["spec"]["versions"]}
        assert versions == {"v2beta2": (True, True), "v2beta1": (False, False)}


# -- through kubesim ---------------------------------------------------------------------------
@pytest.fixture
def k8s(kubesim_kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(kubesim_kubeconfig))
    try:
        yield api
    finally:
        api.close()


def test_kubesim_takes_the_crds_a_lease_and_its_resources(k8s: client.ApiClient) -> None:
    sdl = corpus()["wordpress.yaml"]
    assert isinstance(sdl, SDL)
    spec, group = sdl.groups[0], sdl.manifest.groups[0]
    params = scheduler_params(group, allocation(spec))
    for definition in crds():
        client.ApiextensionsV1Api(k8s).create_custom_resource_definition(definition)
    client.CoreV1Api(k8s).create_namespace({"metadata": {"name": "lease"}})
    for obj in lease_objects(LEASE, group, "v1", settings=SETTINGS, levels=LEVELS, params=params):
        utils.create_from_dict(k8s, obj)
    custom = client.CustomObjectsApi(k8s)
    args = ("akash.network", "v2beta2", "lease")
    custom.create_namespaced_custom_object(
        *args, "manifests", manifest_object(LEASE, group, "v1", settings=SETTINGS, params=params)
    )
    for host in provider_host_objects(LEASE, group, settings=SETTINGS):
        custom.create_namespaced_custom_object(*args, "providerhosts", host)

    stored = custom.list_namespaced_custom_object(*args, "manifests")["items"]
    assert [group_from_manifest_object(m) for m in stored] == [(LEASE, group, "v1")]
    without_annotations = {**stored[0], "metadata": {**stored[0]["metadata"], "annotations": {}}}
    lease, from_spec, version = group_from_manifest_object(without_annotations)
    assert (lease, version) == (LEASE, "")
    assert from_spec == group  # wordpress uses nothing the CRD lacks
    hosts = custom.list_namespaced_custom_object(*args, "providerhosts")["items"]
    assert [h["spec"]["service_name"] for h in hosts] == ["wordpress"] * len(hosts)
