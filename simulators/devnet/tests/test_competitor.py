"""Two providers on one devnet: the genesis ``competitor`` bids against ``provider``, the
tenant picks a winner, the loser's bid is lost; providers and auditors change attributes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from akchain import msgs
from akchain.errors import TxRejected
from akchain.events import decode_block_results
from akchain.wallet import Wallet
from akdevnet.node import AKASH_AUDITOR, AUDITED_ATTRIBUTES, PROVIDER_ATTRIBUTES
from akdevnet.testing import DevnetClients, DevnetProcess
from aktypes.attributes import Attribute
from aktypes.coin import Coin, Dec, DecCoin
from aktypes.events import chain as ev
from aktypes.ids import BidID, DeploymentID
from aktypes.sdl import SDL, parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
TETRIS = CORPUS / "tetris.yaml"  # host: akash, signed by Akash's auditor, at most 10000uact
Cli = Callable[..., subprocess.CompletedProcess[str]]
DEPOSIT = Coin(denom="uakt", amount=500_000)


def attrs(values: dict[str, str]) -> list[Attribute]:
    return [Attribute(key=k, value=v) for k, v in sorted(values.items())]


def where(devnet: DevnetProcess) -> tuple[str, ...]:
    return ("--home", str(devnet.home), "--node", devnet.rpc_url, "--lcd", devnet.lcd_url)


def bid_of(deployment: DeploymentID, provider: str) -> BidID:
    return BidID(owner=deployment.owner, dseq=deployment.dseq, gseq=1, oseq=1, provider=provider)


async def place_bid(wallet: Wallet, deployment: DeploymentID, price: int) -> BidID:
    bid = bid_of(deployment, wallet.address)
    await wallet.send(msgs.create_bid(bid, DecCoin(denom="uact", amount=Dec(price)), DEPOSIT))
    return bid


async def events_at(chain: DevnetClients, height: int) -> list[ev.ChainEvent]:
    """The typed events of one block, decoded as the chain relay decodes them."""
    return decode_block_results(await chain.rpc.block_results(height))


def logged(cli: Cli, devnet: DevnetProcess, height: int) -> list[tuple[str, dict[str, Any]]]:
    """The devnet's own event log at ``height`` (``akdevnet events``): type and attributes."""
    run = cli(
        "events", "--home", str(devnet.home), "--from", str(height), "--to", str(height), "--json"
    )
    assert run.returncode == 0, run.stderr
    found = []
    for line in run.stdout.splitlines():
        event = json.loads(line)
        values = {
            a["key"]: json.loads(a["value"]) for a in event["attributes"] if a["key"] != "msg_index"
        }
        found.append((event["type"], values))
    return found


def sdl_signed_by(auditor: str, attributes: str = "host: akash") -> SDL:
    """Tetris, with placement requirements ``attributes`` signed by ``auditor`` ('' = none)."""
    text = TETRIS.read_text().replace("        host: akash\n", f"        {attributes}\n")
    if auditor:
        return parse_sdl(text.replace(AKASH_AUDITOR, auditor))
    signed_by = f'      signedBy:\n        anyOf:\n          - "{AKASH_AUDITOR}"\n'
    assert signed_by in text
    return parse_sdl(text.replace(signed_by, ""))


# -- genesis --------------------------------------------------------------------------------


async def test_the_genesis_registers_and_audits_the_competitor_like_the_provider(
    chain: DevnetClients,
) -> None:
    provider, competitor = chain.devnet.signer("provider"), chain.devnet.signer("competitor")
    auditor = chain.devnet.signer("auditor")
    registered = {p.owner: p for p in await chain.lcd.providers()}
    assert set(registered) == {provider.address, competitor.address}
    assert registered[provider.address].host_uri == "https://localhost:8443"
    assert registered[competitor.address].host_uri == "https://localhost:8543"
    for owner in (provider.address, competitor.address):
        assert sorted(registered[owner].attributes, key=lambda a: a.key) == attrs(
            PROVIDER_ATTRIBUTES
        )
        audits = {a.auditor: a.attributes for a in await chain.lcd.provider_attributes(owner)}
        assert audits == {
            auditor.address: attrs(AUDITED_ATTRIBUTES),
            AKASH_AUDITOR: attrs(AUDITED_ATTRIBUTES),
        }
    for denom in ("uakt", "uact"):
        assert await chain.lcd.balance(competitor.address, denom) == await chain.lcd.balance(
            provider.address, denom
        )


# -- competing bids -------------------------------------------------------------------------


async def test_the_cheaper_competitor_wins_and_the_providers_bid_is_lost_and_refunded(
    chain: DevnetClients, cli: Cli
) -> None:
    devnet = chain.devnet
    tenant = chain.tenant()
    provider, competitor = chain.wallet("provider"), chain.wallet("competitor")
    deployment = await tenant.deploy(parse_sdl(TETRIS.read_text()))
    dseq = str(deployment.dseq)
    before = await chain.lcd.balance(provider.address, "uakt")

    # both bid with the CLI: the provider at the default (half the order's 10000uact), the
    # competitor at a bare decimal price, in the order's denomination
    placed = cli("bid", dseq, *where(devnet))
    assert placed.returncode == 0, placed.stderr
    assert placed.stdout.strip().endswith(" 5000.000000000000000000uact")
    placed = cli("bid", dseq, "--key", "competitor", "--price", "120.5", *where(devnet))
    assert placed.returncode == 0, placed.stderr
    listed = cli("tenant", "bids", dseq, *where(devnet))
    assert listed.stdout.splitlines() == [
        f"1/1 {competitor.address} 120.5uact",
        f"1/1 {provider.address} 5000uact",
    ]
    after_bid = await chain.lcd.balance(provider.address, "uakt")
    assert after_bid <= before - DEPOSIT.amount  # the deposit (and a fee) left the account

    [lease_id] = await tenant.accept_cheapest(deployment.dseq)
    assert lease_id == bid_of(deployment, competitor.address).lease_id
    lease = await chain.lcd.lease(lease_id)
    assert lease.state == "active"
    assert lease.price == DecCoin(denom="uact", amount=Dec("120.5"))
    assert (await chain.lcd.bid(bid_of(deployment, competitor.address))).state == "active"
    assert (await chain.lcd.order(lease_id.order_id)).state == "active"

    # Akash (x/market CreateLease): every other open bid of the order becomes "lost"
    # (OnBidLost, which emits no event) and its escrow account closes: the deposit comes back
    lost = bid_of(deployment, provider.address)
    assert (await chain.lcd.bid(lost)).state == "lost"
    assert await chain.lcd.bids(owner=tenant.address, dseq=deployment.dseq, state="open") == []
    assert await chain.lcd.balance(provider.address, "uakt") == after_bid + DEPOSIT.amount
    assert await chain.lcd.leases(provider=provider.address) == []
    events = await events_at(chain, lease.created_at)
    assert [type(e).__name__ for e in events] == ["LeaseCreated"]
    assert isinstance(events[0], ev.LeaseCreated)
    assert events[0].lease_id == lease_id
    # a lost bid has no lease: the provider cannot close it (it is done already)
    with pytest.raises(TxRejected) as closing:
        await provider.send(msgs.close_bid(lost))
    assert (closing.value.codespace, closing.value.code) == ("market", 8)


async def test_accept_with_provider_leases_the_chosen_bid_even_when_it_costs_more(
    chain: DevnetClients, cli: Cli
) -> None:
    devnet = chain.devnet
    tenant = chain.tenant()
    provider, competitor = chain.wallet("provider"), chain.wallet("competitor")
    deployment = await tenant.deploy(parse_sdl(TETRIS.read_text()))
    await place_bid(provider, deployment, 900)
    await place_bid(competitor, deployment, 100)

    accepted = cli(
        "tenant", "accept", str(deployment.dseq), "--provider", "provider", *where(devnet)
    )
    assert accepted.returncode == 0, accepted.stderr
    chosen = bid_of(deployment, provider.address)
    assert accepted.stdout.strip() == str(chosen.lease_id)
    assert (await chain.lcd.lease(chosen.lease_id)).price.amount == Dec(900)
    assert (await chain.lcd.bid(chosen)).state == "active"
    assert (await chain.lcd.bid(bid_of(deployment, competitor.address))).state == "lost"

    # the API, by address; a provider without an open bid is a LookupError, nothing is sent
    second = await tenant.deploy(parse_sdl(TETRIS.read_text()), dseq=deployment.dseq + 1)
    await place_bid(provider, second, 900)
    with pytest.raises(LookupError, match=f"no open bid from {competitor.address}"):
        await tenant.accept(second.dseq, competitor.address)
    await place_bid(competitor, second, 950)
    assert await tenant.accept(second.dseq, competitor.address) == [
        bid_of(second, competitor.address).lease_id
    ]
    assert (await chain.lcd.bid(bid_of(second, provider.address))).state == "lost"


async def test_every_other_open_bid_is_lost_not_only_the_first(chain: DevnetClients) -> None:
    """A third provider (a tenant account, registered and audited at run time) bids too."""
    auditor = chain.wallet("auditor")
    third = chain.wallet("tenant-3")
    await third.send(msgs.create_provider(third.address, "https://third.example.com:8443", []))
    await auditor.send(
        msgs.sign_provider_attributes(third.address, auditor.address, attrs({"host": "akash"}))
    )
    tenant = chain.tenant()
    deployment = await tenant.deploy(sdl_signed_by(auditor.address))
    wallets = [chain.wallet("provider"), chain.wallet("competitor"), third]
    for wallet, price in zip(wallets, (300, 200, 100), strict=True):
        await place_bid(wallet, deployment, price)

    [lease_id] = await tenant.accept_cheapest(deployment.dseq)
    assert lease_id.provider == third.address
    states = {
        w.address: (await chain.lcd.bid(bid_of(deployment, w.address))).state for w in wallets
    }
    assert states == {
        wallets[0].address: "lost",
        wallets[1].address: "lost",
        third.address: "active",
    }


async def test_cli_price_and_provider_options_are_checked_before_anything_is_sent(
    chain: DevnetClients, cli: Cli
) -> None:
    devnet = chain.devnet
    deployment = await chain.tenant().deploy(parse_sdl(TETRIS.read_text()))
    dseq = str(deployment.dseq)
    for bad in ("-1", "abc", "1.5 uact"):
        result = cli("bid", dseq, "--key", "competitor", "--price", bad, *where(devnet))
        assert result.returncode == 1
        assert f"--price {bad!r} is not a price" in result.stderr
    result = cli("tenant", "accept", dseq, "--provider", "akash1nope", *where(devnet))
    assert result.returncode == 1
    assert "--provider 'akash1nope'" in result.stderr
    result = cli("tenant", "accept", dseq, "--provider", "../provider", *where(devnet))
    assert result.returncode == 1
    assert "--provider" in result.stderr
    assert await chain.lcd.bids(owner=deployment.owner, dseq=deployment.dseq) == []
    # the competitor's price above the order's maximum is the chain's refusal, one line
    result = cli("bid", dseq, "--key", "competitor", "--price", "10001", *where(devnet))
    assert result.returncode == 1
    assert "market 22" in result.stderr


# -- provider attributes and auditors at run time -------------------------------------------


async def test_updating_a_provider_changes_what_the_lcd_says_and_what_it_may_bid_on(
    chain: DevnetClients, cli: Cli
) -> None:
    competitor = chain.wallet("competitor")
    moved = {**PROVIDER_ATTRIBUTES, "region": "elsewhere"}
    committed = await competitor.send(
        msgs.update_provider(
            competitor.address,
            "https://competitor.example.com:8543",
            attrs(moved),
            email="ops@example.com",
        )
    )
    found = await chain.lcd.provider(competitor.address)
    assert found.host_uri == "https://competitor.example.com:8543"
    assert sorted(found.attributes, key=lambda a: a.key) == attrs(moved)
    assert found.email == "ops@example.com"
    # the audited attributes are the auditors', untouched by the provider's own update
    assert {a.auditor for a in await chain.lcd.provider_attributes(competitor.address)} == {
        chain.devnet.signer("auditor").address,
        AKASH_AUDITOR,
    }

    [updated] = await events_at(chain, committed.height)
    assert isinstance(updated, ev.ProviderUpdated)
    assert updated.owner == competitor.address
    assert logged(cli, chain.devnet, committed.height) == [
        ("akash.provider.v1beta4.EventProviderUpdated", {"owner": competitor.address})
    ]

    # an order that asks for region=local without auditors: the provider's own attributes
    # decide, so the provider may bid and the moved competitor may not
    deployment = await chain.tenant().deploy(sdl_signed_by("", "region: local"))
    await place_bid(chain.wallet("provider"), deployment, 100)
    with pytest.raises(TxRejected) as mismatch:
        await place_bid(competitor, deployment, 100)
    assert (mismatch.value.codespace, mismatch.value.code) == ("market", 5)

    with pytest.raises(TxRejected) as unknown:
        await chain.wallet("tenant-2").send(
            msgs.update_provider(
                chain.devnet.signer("tenant-2").address, "https://x.example.com:8443", []
            )
        )
    assert (unknown.value.codespace, unknown.value.code) == ("provider", 3)


async def test_an_auditor_signing_and_deleting_attributes(chain: DevnetClients, cli: Cli) -> None:
    auditor = chain.wallet("auditor")
    competitor = chain.devnet.signer("competitor").address

    async def signed() -> dict[str, str]:
        for audited in await chain.lcd.provider_attributes(competitor):
            if audited.auditor == auditor.address:
                return {a.key: a.value for a in audited.attributes}
        return {}

    # signing merges into what the auditor signed before
    committed = await auditor.send(
        msgs.sign_provider_attributes(competitor, auditor.address, attrs({"tier": "premium"}))
    )
    assert await signed() == {**AUDITED_ATTRIBUTES, "tier": "premium"}
    [created] = await events_at(chain, committed.height)
    assert isinstance(created, ev.AuditorAttributesChanged)
    assert (created.owner, created.auditor, created.action) == (
        competitor,
        auditor.address,
        "signed",
    )
    assert logged(cli, chain.devnet, committed.height) == [
        (
            "akash.audit.v1.EventTrustedAuditorCreated",
            {"auditor": auditor.address, "owner": competitor},
        )
    ]

    # an order that needs host=akash signed by the devnet's auditor
    deployment = await chain.tenant().deploy(sdl_signed_by(auditor.address))
    committed = await auditor.send(
        msgs.delete_provider_attributes(auditor.address, competitor, ["host"])
    )
    assert await signed() == {"region": "local", "tier": "premium"}
    [deleted] = await events_at(chain, committed.height)
    assert isinstance(deleted, ev.AuditorAttributesChanged)
    assert (deleted.owner, deleted.auditor, deleted.action) == (
        competitor,
        auditor.address,
        "deleted",
    )
    assert logged(cli, chain.devnet, committed.height) == [
        (
            "akash.audit.v1.EventTrustedAuditorDeleted",
            {"auditor": auditor.address, "owner": competitor},
        )
    ]
    with pytest.raises(TxRejected) as unsigned:
        await place_bid(chain.wallet("competitor"), deployment, 100)
    assert (unsigned.value.codespace, unsigned.value.code) == ("market", 5)

    # a key the auditor never signed: Akash's "attribute not found"
    with pytest.raises(TxRejected) as missing:
        await auditor.send(msgs.delete_provider_attributes(auditor.address, competitor, ["host"]))
    assert (missing.value.codespace, missing.value.code) == ("audit", 3)

    # signed again, the competitor may bid
    await auditor.send(
        msgs.sign_provider_attributes(competitor, auditor.address, attrs({"host": "akash"}))
    )
    await place_bid(chain.wallet("competitor"), deployment, 100)

    # no keys: the auditor's whole record goes; another auditor's stays
    await auditor.send(msgs.delete_provider_attributes(auditor.address, competitor, []))
    assert [a.auditor for a in await chain.lcd.provider_attributes(competitor)] == [AKASH_AUDITOR]
    with pytest.raises(TxRejected) as gone:
        await auditor.send(msgs.delete_provider_attributes(auditor.address, competitor, []))
    assert (gone.value.codespace, gone.value.code) == ("audit", 1)
    # Akash's ValidateBasic refuses an owner that is not an address before looking anything up
    with pytest.raises(TxRejected) as invalid:
        await auditor.send(msgs.delete_provider_attributes(auditor.address, "akash1nope", []))
    assert (invalid.value.codespace, invalid.value.code) == ("sdk", 7)
