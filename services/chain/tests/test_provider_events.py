"""Provider and audit changes reach the stream as ``ProviderUpdated`` and
``AuditorAttributesChanged``, for this provider only (not for the devnet's competitor).
"""

from __future__ import annotations

from akbus import Bus
from akchain import msgs
from akchainsvc.testing import RelayProcess, chain_events
from akdevnet.node import PROVIDER_ATTRIBUTES
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.attributes import Attribute
from aktypes.events import chain as ev

ATTRIBUTES = [Attribute(key=k, value=v) for k, v in sorted(PROVIDER_ATTRIBUTES.items())]


async def test_provider_updates_and_auditor_changes_are_relayed_for_this_provider(
    relay: RelayProcess, bus: Bus, chain: DevnetClients
) -> None:
    provider, competitor = chain.wallet("provider"), chain.wallet("competitor")
    auditor = chain.wallet("auditor")
    # the competitor's changes come first: they must not be relayed
    await competitor.send(
        msgs.update_provider(competitor.address, "https://localhost:8543", ATTRIBUTES[:1])
    )
    await auditor.send(msgs.delete_provider_attributes(auditor.address, competitor.address, []))
    update = await provider.send(
        msgs.update_provider(provider.address, "https://localhost:9443", ATTRIBUTES)
    )
    signed = await auditor.send(
        msgs.sign_provider_attributes(
            provider.address, auditor.address, [Attribute(key="tier", value="premium")]
        )
    )
    deleted = await auditor.send(
        msgs.delete_provider_attributes(auditor.address, provider.address, ["tier"])
    )

    async def relayed() -> list[ev.ProviderUpdated | ev.AuditorAttributesChanged]:
        found = [
            e
            for e in await chain_events(bus)
            if isinstance(e, ev.ProviderUpdated | ev.AuditorAttributesChanged)
        ]
        return found if found and found[-1].height >= deleted.height else []

    found = await eventually(relayed, timeout_s=30.0, what="the provider's changes on the stream")
    assert [(type(e).__name__, e.height, e.owner) for e in found] == [
        ("ProviderUpdated", update.height, provider.address),
        ("AuditorAttributesChanged", signed.height, provider.address),
        ("AuditorAttributesChanged", deleted.height, provider.address),
    ]
    changes = [e for e in found if isinstance(e, ev.AuditorAttributesChanged)]
    assert [(e.auditor, e.action) for e in changes] == [
        (auditor.address, "signed"),
        (auditor.address, "deleted"),
    ]
