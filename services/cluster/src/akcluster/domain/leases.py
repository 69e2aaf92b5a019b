"""Deployed leases: each lease's record, its life, and who may use which hostname.

A :class:`LeaseRecord` is the deployment manager of one lease, kept in Redis instead of a
goroutine's memory: the manifest group to run (``version``), the one Kubernetes holds
(``applied``), and where the lease is in its life:

- ``deploying``: the desired group is not applied yet (new lease, update, objects lost);
- ``deployed``: applied; the health monitor checks it;
- ``closing``: the lease closed on chain; its objects are being removed;
- ``closed``: removed (kept a while as a tombstone, so a late manifest never revives it).

An update that arrives during a deploy only changes ``version``: the deploy in flight
commits ``applied`` = what it applied, sees that ``version`` moved on, and deploys again.
What to do next and when is a score in one sorted set (the work queue), so the schedule
survives restarts like the records do.

Hostnames (Akash's hostname service): a blocked list (``.example.com`` blocks every
subdomain), never a hostname another tenant holds, and a hostname held by another lease of
the same tenant is *withheld* — not routed to this lease until it is released or moved.
With static ingress hosts, each HTTP service also gets a generated hostname
(:func:`aktypes.ingress.ingress_host`): held like the others, so no tenant can accept it in
an SDL, but never blocked nor moved (it is the lease's own).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aktypes.ids import LeaseID
from aktypes.ingress import ingress_host
from aktypes.manifest.models import Group

LEASE_KEY_PREFIX = "akcluster:lease:"
LEASES_KEY = "akcluster:leases"  # every lease not closed
WORK_KEY = "akcluster:work"  # lease → when to take its next step
HOSTNAMES_KEY = "akcluster:hostnames"  # hostname → lease id
HOSTNAMES_VERSION_KEY = "akcluster:hostnames:version"
ENDPOINTS_KEY = "akcluster:endpoints"  # <owner>/<endpoint name> → lease id
ENDPOINTS_VERSION_KEY = "akcluster:endpoints:version"
CLOSED_TTL_S = 7 * 24 * 3600

State = Literal["deploying", "deployed", "closing", "closed"]
Health = Literal["unknown", "deployed", "pending", "failed"]


def lease_key(lease_id: LeaseID | str) -> str:
    return f"{LEASE_KEY_PREFIX}{lease_id}"


class LeaseRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    lease_id: LeaseID
    group: Group
    version: str
    applied: str = ""  # the version Kubernetes holds ("" = nothing applied yet)
    state: State = "deploying"
    health: Health = "unknown"
    failures: int = 0  # unhealthy checks (or failed deploys) in a row
    retries: int = 0  # attempts that could not reach Kubernetes, in a row (for backoff)
    close_sent: bool = False  # CloseBid(unstable) was sent
    monitored: bool = False  # LeaseFundsMonitor(add) was sent
    recovered: bool = False  # rebuilt at start from Kubernetes, not from a manifest event
    hosts: list[str] = Field(default_factory=list)  # hostnames routed to this lease
    withheld: list[str] = Field(default_factory=list)  # held by another lease of the owner
    endpoints: list[str] = Field(default_factory=list)  # leased-IP endpoints held
    withheld_endpoints: list[str] = Field(default_factory=list)  # another lease holds them
    # generated hostnames a lease taken over from the Go provider had (hostname -> service):
    # routed as it named them, whatever this cluster's ingress domain
    adopted_hosts: dict[str, str] = Field(default_factory=dict)
    # leased-IP endpoints it had: their ProviderLeasedIPs keep Go's names and sharing key,
    # so the addresses MetalLB gave them stay
    adopted_endpoints: list[str] = Field(default_factory=list)
    message: str = ""
    updated_at: float = 0.0

    @property
    def key(self) -> str:
        return lease_key(self.lease_id)

    def services(self) -> list[tuple[str, int]]:
        return [(service.name, service.count) for service in self.group.services or ()]

    def with_manifest(self, group: Group, version: str) -> LeaseRecord:
        """A (new) manifest: deploy it next, unless it is the one already applied."""
        if version == self.version and group == self.group:
            return self
        return self.model_copy(
            update={"group": group, "version": version, "state": "deploying", "failures": 0}
        )


def service_names(group: Group) -> list[str]:
    return sorted(service.name for service in group.services or ())


def manifest_hostnames(group: Group) -> list[str]:
    """Every hostname the group's HTTP exposes accept, lower-cased, in order, once."""
    seen: dict[str, None] = {}
    for service in group.services or ():
        for expose in service.expose or ():
            for host in expose.hosts or ():
                seen.setdefault(host.lower(), None)
    return list(seen)


def lease_hostnames(
    lease_id: LeaseID, group: Group, domain: str = "", adopted: Mapping[str, str] | None = None
) -> list[str]:
    """Every hostname the lease routes: the group's accepted ones, then, with an ingress
    domain (static hosts), the generated one of each service with an HTTP ingress expose,
    then the generated ones ``adopted`` from the Go provider (hostname -> service) whose
    service still has one."""
    seen = dict.fromkeys(manifest_hostnames(group))
    ingress = [
        service.name
        for service in group.services or ()
        if any(expose.is_ingress for expose in service.expose or ())
    ]
    if domain:
        for name in ingress:
            seen.setdefault(ingress_host(lease_id, name, domain), None)
    for host, service in (adopted or {}).items():
        if service in ingress:
            seen.setdefault(host.lower(), None)
    return list(seen)


def manifest_endpoints(group: Group) -> list[str]:
    """Every leased-IP endpoint name the group's exposes use, in order, once."""
    seen: dict[str, None] = {}
    for service in group.services or ():
        for expose in service.expose or ():
            if expose.ip:
                seen.setdefault(expose.ip, None)
    return list(seen)


def blocked(hostname: str, blocked_list: Iterable[str]) -> str | None:
    """The entry of ``blocked_list`` that forbids ``hostname``, if any; an IP address is
    always refused (an Ingress routes names only, and an address is no tenant's)."""
    host = hostname.lower()
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return "IP addresses"
    for entry in blocked_list:
        if entry.startswith("."):
            if host.endswith(entry) or host == entry[1:]:
                return entry
        elif host == entry:
            return entry
    return None


def _same_deployment(a: LeaseID, b: LeaseID) -> bool:
    return (a.owner, a.dseq, a.gseq) == (b.owner, b.dseq, b.gseq)


def hostname_refusals(
    lease_id: LeaseID,
    hostnames: Iterable[str],
    holders: Mapping[str, str],
    blocked_list: Iterable[str],
) -> dict[str, str]:
    """Hostnames ``lease_id`` may not use, each with why (blocked, another tenant's)."""
    blocked_list = list(blocked_list)
    refused: dict[str, str] = {}
    for host in hostnames:
        entry = blocked(host, blocked_list)
        if entry is not None:
            refused[host] = f"hostname {host!r} is blocked by this provider ({entry})"
            continue
        holder = holders.get(host.lower())
        if holder is not None and LeaseID.parse(holder).owner != lease_id.owner:
            refused[host] = f"hostname {host!r} is in use by another tenant"
    return refused


def claim_hostnames(
    lease_id: LeaseID, hostnames: Iterable[str], holders: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """Split the (allowed) hostnames into (claimed by this lease, withheld).

    Withheld: held by another deployment of the same tenant (Akash moves it only on an
    explicit migration). A hostname the lease's own deployment holds stays with it.
    """
    claimed: list[str] = []
    withheld: list[str] = []
    for host in hostnames:
        holder = holders.get(host)
        if holder is None or _same_deployment(LeaseID.parse(holder), lease_id):
            claimed.append(host)
        else:
            withheld.append(host)
    return claimed, withheld
