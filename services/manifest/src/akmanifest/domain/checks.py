"""The checks a submitted manifest goes through, in order, each with a code and a reason.

Pure functions over the manifest, what the chain says of its deployment
(:class:`DeploymentFacts`) and the manifest accepted before; the hostname check is the one
that needs the cluster, so this module only says which hostnames to ask about per lease and
words the answer. Without static ingress hosts an HTTP expose without hostnames is refused
before the cluster is asked (``hostname_not_allowed``, Go's message). Codes (the gateway's
HTTP status in brackets): ``invalid``, ``version_mismatch``, ``cross_validation``,
``services_changed``, ``hostname_not_allowed`` (422); ``deployment_not_found``,
``no_lease`` (404); ``chain_unavailable``, ``cluster_unavailable`` (503). Every reason says
what is wrong and where (group, service, expose), and lists every problem found, not only
the first. The provider's own host (its on-chain host URI's) is refused here, before the
cluster is asked about the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aktypes.groupspec import GroupSpec
from aktypes.ids import DeploymentID, LeaseID
from aktypes.manifest import Group, Manifest, cross_validation_problems, manifest_problems

INVALID = "invalid"
VERSION_MISMATCH = "version_mismatch"
CROSS_VALIDATION = "cross_validation"
SERVICES_CHANGED = "services_changed"
HOSTNAME_NOT_ALLOWED = "hostname_not_allowed"
DEPLOYMENT_NOT_FOUND = "deployment_not_found"
NO_LEASE = "no_lease"
CHAIN_UNAVAILABLE = "chain_unavailable"
CLUSTER_UNAVAILABLE = "cluster_unavailable"

HTTP_STATUS: Mapping[str, int] = {
    INVALID: 422,
    VERSION_MISMATCH: 422,
    CROSS_VALIDATION: 422,
    SERVICES_CHANGED: 422,
    HOSTNAME_NOT_ALLOWED: 422,
    DEPLOYMENT_NOT_FOUND: 404,
    NO_LEASE: 404,
    CHAIN_UNAVAILABLE: 503,
    CLUSTER_UNAVAILABLE: 503,
}
"""What the gateway answers for each code (Akash: 422 for a bad manifest, 404 without lease)."""

CHAIN_CODES = frozenset({DEPLOYMENT_NOT_FOUND, VERSION_MISMATCH, CROSS_VALIDATION, NO_LEASE})
"""Rejections that depend on what the chain said (a cached answer is read again first)."""


@dataclass(frozen=True)
class Rejection:
    code: str
    reason: str


@dataclass(frozen=True)
class DeploymentFacts:
    """What the chain says of a deployment: state, hash, groups, and our active leases."""

    deployment_id: DeploymentID
    state: str  # active | closed
    hash: str  # hex of the version the tenant declared
    groups: tuple[tuple[int, GroupSpec], ...]  # (gseq, spec), in gseq order
    leases: tuple[LeaseID, ...]  # this provider's active leases on it

    def group_name(self, gseq: int) -> str | None:
        return next((spec.name for seq, spec in self.groups if seq == gseq), None)


def _listed(problems: Sequence[str]) -> str:
    return "; ".join(problems)


def check_manifest(manifest: Manifest) -> Rejection | None:
    """Akash's ``Manifest.Validate``, every problem at once."""
    problems = manifest_problems(manifest)
    return Rejection(INVALID, f"invalid manifest: {_listed(problems)}") if problems else None


def check_against_chain(
    manifest: Manifest, deployment_id: DeploymentID, facts: DeploymentFacts | None
) -> Rejection | None:
    """Deployment found and active, version equal to its hash, groups matching, a lease."""
    if facts is None:
        return Rejection(
            DEPLOYMENT_NOT_FOUND,
            f"deployment {deployment_id.dseq} of {deployment_id.owner} does not exist on chain",
        )
    if facts.state != "active":
        return Rejection(
            DEPLOYMENT_NOT_FOUND,
            f"deployment {deployment_id.dseq} is {facts.state}: it takes no manifest",
        )
    version = manifest.version_hex()
    if version != facts.hash:
        return Rejection(
            VERSION_MISMATCH,
            f"manifest version {version} is not the deployment's hash on chain "
            f"{facts.hash or '(none)'} (send the manifest of the SDL the deployment was created "
            "or last updated with)",
        )
    problems = cross_validation_problems(manifest, [spec for _, spec in facts.groups])
    if problems:
        return Rejection(
            CROSS_VALIDATION,
            f"manifest does not match the deployment's groups on chain: {_listed(problems)}",
        )
    if not facts.leases:
        return Rejection(
            NO_LEASE,
            f"deployment {deployment_id.dseq} has no active lease with this provider",
        )
    unknown = [str(lease) for lease in facts.leases if facts.group_name(lease.gseq) is None]
    if unknown:  # cannot happen on a sound chain: a lease always belongs to a group
        return Rejection(NO_LEASE, f"leases without a deployment group: {', '.join(unknown)}")
    return None


def leased_groups(manifest: Manifest, facts: DeploymentFacts) -> list[tuple[LeaseID, Group]]:
    """Each of our leases with the manifest group it runs (after the checks above passed)."""
    found = []
    for lease in facts.leases:
        name = facts.group_name(lease.gseq)
        group = manifest.group(name) if name is not None else None
        if group is not None:
            found.append((lease, group))
    return found


def check_services_unchanged(manifest: Manifest, accepted: Manifest) -> Rejection | None:
    """An update keeps every group's service names (Kubernetes objects are named after them)."""
    problems = []
    for group in manifest.groups:
        before = accepted.group(group.name)
        if before is None:
            continue
        old = sorted(s.name for s in before.services or ())
        new = sorted(s.name for s in group.services or ())
        if old != new:
            gone = sorted(set(old) - set(new))
            added = sorted(set(new) - set(old))
            problems.append(
                f"group {group.name!r}: services {', '.join(old)} would become "
                f"{', '.join(new)} (removed: {', '.join(gone) or '-'}; "
                f"added: {', '.join(added) or '-'})"
            )
    if not problems:
        return None
    return Rejection(
        SERVICES_CHANGED,
        "an update cannot add, remove or rename services: "
        + _listed(problems)
        + " (close the deployment and create a new one)",
    )


def ingress_hostnames(group: Group) -> dict[str, list[str]]:
    """Hostnames of the group's HTTP ingress exposes (lower-cased), each with where it is."""
    found: dict[str, list[str]] = {}
    for service in group.services or ():
        for expose in service.expose or ():
            if not expose.is_ingress:
                continue
            where = (
                f"group {group.name!r} service {service.name!r} "
                f"expose {expose.port}/{expose.proto.lower()}"
            )
            for host in expose.hosts or ():
                found.setdefault(host.lower(), []).append(where)
    return found


def check_http_hosts(leased: Sequence[tuple[LeaseID, Group]]) -> Rejection | None:
    """Without static ingress hosts (Akash's ``HTTPServicesRequireAtLeastOneHost``): every
    HTTP ingress expose of a leased group accepts a hostname, else it would have no address.
    Go's words (``manifest/manager.go``), every expose at fault listed."""
    problems: dict[str, None] = {}
    for _, group in leased:
        for service in group.services or ():
            for expose in service.expose or ():
                if expose.is_ingress and not expose.hosts:
                    problem = (
                        f'service "{service.name}" exposed on '
                        f"{expose.effective_external_port}:{expose.proto} must have a hostname"
                    )
                    problems.setdefault(problem, None)
    if not problems:
        return None
    return Rejection(
        HOSTNAME_NOT_ALLOWED,
        f"manifest rejected: {_listed(list(problems))} (this provider generates no hostnames: "
        "accept one in the SDL)",
    )


def hostname_rejection(
    refused: Mapping[str, str], places: Mapping[str, Sequence[str]]
) -> Rejection | None:
    """Word the cluster's refusals, each hostname with where the manifest asks for it."""
    if not refused:
        return None
    parts = []
    for host in sorted(refused):
        where = ", ".join(places.get(host.lower(), ())) or "the manifest"
        parts.append(f"{host} ({where}): {refused[host] or 'refused'}")
    return Rejection(HOSTNAME_NOT_ALLOWED, f"hostnames not allowed: {_listed(parts)}")


def check_own_host(leased: Sequence[tuple[LeaseID, Group]], host: str) -> Rejection | None:
    """No lease may route the provider's own host (its on-chain host URI's, the gateway's)."""
    places = [where for _, group in leased for where in ingress_hostnames(group).get(host, ())]
    if not host or not places:
        return None
    return hostname_rejection({host: "it is this provider's own host"}, {host: places})
