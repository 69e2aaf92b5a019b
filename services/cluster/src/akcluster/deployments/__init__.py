"""Deployment managers: every lease of ours from manifest to running workload to teardown.

Each lease has a record in Redis (:mod:`akcluster.domain.leases`) and a place in a work
queue (a sorted set: lease → when its next step is due). Events only change records:

- ``ManifestReceived`` sets the group to run and queues a deploy (an update during a deploy
  waits for it: the record's ``version`` moves on and the running deploy sees it);
- ``LeaseClosed`` (a lease of ours) marks the record ``closing`` and queues the teardown.

The steps run in this process's worker, a few leases at a time, and each ends with one
guarded write (the record, the next due time and the events it publishes, committed only
if the record is still the one the step read — else merged with what changed meanwhile):

- deploy: claim the hostnames (with static ingress hosts, each HTTP service's generated
  one too) and leased-IP endpoints (:mod:`akcluster.registry`), apply
  every object (the Manifest resource first, then the namespace and the workload:
  idempotent, so a repeated deploy writes nothing), remove what the group no longer has;
  then ``DeploymentApplied`` and, once, ``LeaseFundsMonitor(add)``;
- health check (the monitor): every service available → healthy; otherwise one more
  failure, and after ``AP_MONITOR_MAX_RETRIES`` in a row a ``CloseBid`` (reason unstable).
  A check that cannot reach Kubernetes judges nothing: an API outage never closes a lease;
- teardown: remove the namespace and the lease's resources, release its names and its
  reservation, then ``LeaseTornDown`` and ``LeaseFundsMonitor(remove)``. Retried until done.

A migration (Akash's ``/hostname/migrate``, ``/endpoint/migrate``) gives names an owner's
lease holds to another lease of that owner, then re-applies both.

At start the records are reconciled with Kubernetes (:meth:`Deployments.recover`): every
deployed lease's objects are compared with what the cluster holds, read with one LIST per
kind, and only a lease whose objects differ is deployed again; a Manifest resource without a
record (a provider moved from Akash's, or Redis lost) gets one — its group, the GPUs it
names, the generated hostnames its ProviderHosts hold — and a lease namespace with neither
is torn down.

One module per part, each importing only those listed before it:

- :mod:`~akcluster.deployments.ports`: what a cluster backend offers (``kube``, ``null``);
- :mod:`~akcluster.deployments.records`: the records and the work queue
  (:class:`akbus.Records`: every change one guarded write);
- :mod:`~akcluster.deployments.context`: what the parts share, and the monitor's timing;
- :mod:`~akcluster.deployments.health`: the health check and the failure budget;
- :mod:`~akcluster.deployments.steps`: deploy and teardown, and the objects a lease needs;
- :mod:`~akcluster.deployments.worker`: the loop that runs the due steps;
- :mod:`~akcluster.deployments.recovery`: reconciliation at start;
- :mod:`~akcluster.deployments.events`: what ``ManifestReceived`` and ``LeaseClosed`` change;
- :mod:`~akcluster.deployments.queries`: the gateway's queries and migrations;
- :mod:`~akcluster.deployments.statuses`: each lease's status kept from Kubernetes watches
  and published for the gateway to serve from memory;
- :mod:`~akcluster.deployments.managers`: :class:`Deployments`, all of them together.
"""

from akcluster.deployments.context import MonitorPolicy
from akcluster.deployments.managers import Deployments
from akcluster.deployments.ports import Backend, LeaseStatus, Scan
from akcluster.deployments.recovery import RECOVERED
from akcluster.deployments.steps import desired_objects

__all__ = [
    "RECOVERED",
    "Backend",
    "Deployments",
    "LeaseStatus",
    "MonitorPolicy",
    "Scan",
    "desired_objects",
]
