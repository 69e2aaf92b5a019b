"""The relay's pure rules: which events it publishes for a provider, what error codes mean."""

from __future__ import annotations

import pytest

from akchainsvc.domain.events import concerns
from akchainsvc.domain.verdicts import Verdict, verdict
from aktypes.events import chain as ev
from aktypes.testing import address, example_payloads

CHAIN_EVENTS = [p for p in example_payloads() if isinstance(p, ev.ChainEvent)]
ME, OTHER = address(2), address(9)  # the examples' provider, and someone else


def test_every_market_wide_event_is_published_and_the_rest_only_for_this_provider() -> None:
    published = {type(e).__name__ for e in CHAIN_EVENTS if concerns(e, ME)}
    for_others = {type(e).__name__ for e in CHAIN_EVENTS if concerns(e, OTHER)}
    assert {"OrderCreated", "DeploymentClosed", "GroupClosed", "LeaseCreated"} <= for_others
    assert {"BidCreated", "BidClosed", "LeaseClosed", "ProviderUpdated"} <= published
    assert not {"BidCreated", "BidClosed", "LeaseClosed", "ProviderUpdated"} & for_others


@pytest.mark.parametrize(
    ("code", "codespace", "expected"),
    [
        (32, "sdk", Verdict.RESIGN),
        (11, "sdk", Verdict.MORE_GAS),
        (19, "", Verdict.WAIT),
        (20, "sdk", Verdict.RETRY),
        (5, "sdk", Verdict.FAIL),
        (32, "market", Verdict.FAIL),  # another module's code 32 is not a sequence mismatch
    ],
)
def test_chain_error_codes(code: int, codespace: str, expected: Verdict) -> None:
    assert verdict(code, codespace) is expected
