"""Which chain events concern this provider: the relay publishes those."""

from __future__ import annotations

from aktypes.events import chain as ev

# Every order, deployment and group event is relayed: the bid engine needs all new orders,
# and closed orders and deployments for the ones it is still pricing; every new lease, since
# another provider's lease is how it learns that its own bid lost. Bid events and other
# lease events only for this provider; provider and audit events only about this provider.
_EVERYONE = (
    ev.OrderCreated,
    ev.OrderClosed,
    ev.DeploymentCreated,
    ev.DeploymentUpdated,
    ev.DeploymentClosed,
    ev.GroupStarted,
    ev.GroupPaused,
    ev.GroupClosed,
)


def concerns(event: ev.ChainEvent, provider: str) -> bool:
    """Whether the relay publishes ``event`` for ``provider``."""
    if isinstance(event, _EVERYONE):
        return True
    if isinstance(event, ev.BidCreated | ev.BidClosed):
        return event.bid_id.provider == provider
    if isinstance(event, ev.LeaseCreated):
        return True  # another provider's lease tells the bid engine its own bid was lost
    if isinstance(event, ev.LeaseClosed | ev.LeaseReclaimStarted):
        return event.lease_id.provider == provider
    if isinstance(event, ev.ProviderUpdated | ev.AuditorAttributesChanged):
        return event.owner == provider
    return False
