"""Leader election of an operator's replicas on a Kubernetes ``Lease``, as client-go does it.

One ``coordination.k8s.io/v1`` Lease per operator (``akash-provider-<name>-operator``) in
the provider's namespace (``AP_LEADER_ELECTION_NAMESPACE``, ``akash-services``).
``holderIdentity`` is the process's consumer name. The holder renews ``renewTime`` every
renew interval; another replica takes the Lease over once it has seen the same record,
unchanged, for ``leaseDurationSeconds`` by its own clock (never by comparing clocks across
nodes). Every write carries the ``resourceVersion`` it read (a create, the name): of two
replicas racing, the API server answers the second 409 Conflict, so two never both win.
A clean stop hands the Lease back (an empty holder) and the standby takes it at once.

Why a Lease rather than kopf's peering: peering (``KopfPeering`` objects) pauses operators
of lower priority but lets equal ones run side by side and is documented as a development
aid, not leader election; a Lease is what every other Kubernetes controller uses, is
visible with ``kubectl get lease``, and needs no CRD.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from akoperators.adapters.kube import Kube
from akoperators.errors import KubeError
from akservice import Runtime
from akservice.leadership import LeaderElectionSettings, Leadership


class OperatorElectionSettings(LeaderElectionSettings):
    """The lease timings, and where the operators' Leases are."""

    leader_election_namespace: str = Field(
        default="akash-services",
        min_length=1,
        description="namespace of the operators' Leases (the provider's own)",
    )


def lease_name(operator: str) -> str:
    return f"akash-provider-{operator}-operator"


def micro_time() -> str:
    """Now as Kubernetes' MicroTime (RFC 3339 with microseconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubeLease:
    """One operator's Lease as one replica sees it (a :class:`akservice.leadership.Candidate`)."""

    fenced = False  # kopf's writes do not check the Lease: a leader that cannot renew stops

    def __init__(
        self, kube: Kube, namespace: str, name: str, identity: str, duration_s: float
    ) -> None:
        self.kube, self.namespace, self.name, self.identity = kube, namespace, name, identity
        self.duration_s = max(1, round(duration_s))
        self.collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.path = f"{self.collection}/{name}"
        self.holder = ""
        self._seen: tuple[str, str] | None = None  # (holder, renewTime) last observed
        self._seen_at = 0.0  # monotonic time it was first observed

    def _spec(self, old: dict[str, Any], now: str) -> dict[str, Any]:
        taking = old.get("holderIdentity") != self.identity
        return {
            **old,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration_s,
            "renewTime": now,
            "acquireTime": now if taking else old.get("acquireTime", now),
            "leaseTransitions": int(old.get("leaseTransitions") or 0) + (1 if taking else 0),
        }

    async def try_hold(self) -> bool:
        lease = await self.kube.get(self.path)
        now = micro_time()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**self._spec({}, now), "leaseTransitions": 0},
            }
            return await self._write("POST", self.collection, body)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        self.holder = holder
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._seen:
            self._seen, self._seen_at = record, time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.duration_s)
        if holder not in ("", self.identity) and time.monotonic() - self._seen_at < duration:
            return False  # another replica's, and alive as far as this one has seen
        lease["spec"] = self._spec(spec, now)
        return await self._write("PUT", self.path, lease)

    async def _write(self, method: str, path: str, body: dict[str, Any]) -> bool:
        try:
            await self.kube.request(method, path, body=body)
        except KubeError as exc:
            if exc.status == 409:  # another replica wrote first: look again next time
                return False
            raise
        self.holder = self.identity
        return True

    async def release(self) -> None:
        try:
            lease = await self.kube.get(self.path)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**lease["spec"], "holderIdentity": "", "renewTime": micro_time()}
            await self.kube.request("PUT", self.path, body=lease)
        except KubeError:
            return  # it expires on its own


async def lead(
    rt: Runtime[Any], kube: Kube, operator: str, settings: OperatorElectionSettings
) -> Leadership:
    """Wait as a standby until this replica holds ``operator``'s Lease (see
    :meth:`akservice.Runtime.lead`); what is wired after it runs on the leader alone."""
    lease = KubeLease(
        kube,
        settings.leader_election_namespace,
        lease_name(operator),
        rt.consumer,
        settings.leader_election_lease_duration,
    )
    return await rt.lead(lease, settings)
