"""Pure rules of the relay: which chain events concern this provider, and what a chain
error code means for a transaction (retry with a fresh sequence, more gas, or give up).
"""

from __future__ import annotations

from enum import Enum

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


class Verdict(Enum):
    """What to do after the chain answered a transaction with an error code."""

    RESIGN = "resign"  # the sequence moved on: sign again with a fresh one
    MORE_GAS = "more_gas"  # out of gas: sign again with a higher limit
    WAIT = "wait"  # already in the mempool: wait for it
    RETRY = "retry"  # the node is busy (mempool full): try the same bytes later
    FAIL = "fail"  # the chain refused the messages themselves: report it


def verdict(code: int, codespace: str) -> Verdict:
    if codespace not in ("", "sdk"):
        return Verdict.FAIL
    return {
        32: Verdict.RESIGN,  # account sequence mismatch
        11: Verdict.MORE_GAS,  # out of gas
        19: Verdict.WAIT,  # tx already in the mempool cache
        20: Verdict.RETRY,  # mempool is full
    }.get(code, Verdict.FAIL)
