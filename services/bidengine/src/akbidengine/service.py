"""The bid engine process: wiring, deadlines, catch-up and status, on the service runtime.

Start: learn the provider's address (``AP_PROVIDER_ADDRESS``, else the chain relay's
status), read its on-chain attributes and audits, then consume ``akash.chain.events``
(orders, leases, bids, attribute changes; partitioned by order so one order's events run in
order), ``akash.provider.chain.results`` (our bid transactions) and
``akash.provider.bidengine.commands`` (bid screening); run the bid deadlines, the periodic
catch-up of open orders, the reconciliation of its bids with the chain
(:mod:`akbidengine.reconcile`) and the status publisher. Every order's state is in Redis: a
restarted engine resumes each one where it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from typing import Any

from akbidengine import metrics
from akbidengine.adapters.chain import LCDQueries
from akbidengine.adapters.price_script import ShellScriptStrategy
from akbidengine.catchup import keep_catching_up
from akbidengine.domain.filtering import TenantPolicy
from akbidengine.domain.order import ACTIVE_KEY
from akbidengine.domain.pricing import PricingStrategy
from akbidengine.errors import ChainUnavailable, ProviderConfigError
from akbidengine.facts import Facts
from akbidengine.handlers import BidPolicy, Orders
from akbidengine.reconcile import Reconciliation
from akbidengine.screening import on_screen_bid
from akbidengine.settings import BidSettings
from akbus import ConnectionLost, Message
from akchain.lcd import LCDClient
from akservice import Runtime, ServiceSpec
from aktypes.events import (
    AuditorAttributesChanged,
    BalanceStatus,
    BidClosed,
    BidEngineStatus,
    Envelope,
    LeaseCreated,
    OrderClosed,
    OrderCreated,
    ProviderUpdated,
    ScreenBid,
    TxCommitted,
    TxFailed,
)
from aktypes.events.streams import BIDENGINE_COMMANDS, CHAIN_EVENTS, CHAIN_RESULTS

log = logging.getLogger("akbidengine")
BALANCE_STATUS_MAX_AGE_S = 60.0


def order_of(envelope: Envelope[Any]) -> str | None:
    """The order an event is about (its partition: one order's events run in order)."""
    payload = envelope.payload
    for name in ("order_id", "lease_id", "bid_id"):
        ident = getattr(payload, name, None)
        if ident is not None:
            return str(ident.order_id) if name != "order_id" else str(ident)
    key = getattr(payload, "key", None)
    return key.partition("/")[2] or key if isinstance(key, str) else None


def strategy_of(settings: BidSettings) -> PricingStrategy:
    if settings.bid_price_strategy == "shellScript" and settings.bid_price_script_path:
        return ShellScriptStrategy(
            settings.bid_price_script_path,
            process_limit=settings.bid_price_script_process_limit,
            timeout=settings.bid_price_script_process_timeout,
        )
    return settings.scale()


async def expire_deadlines(rt: Runtime[BidSettings], orders: Orders) -> None:
    while True:
        with contextlib.suppress(ConnectionLost, ChainUnavailable):
            await orders.expire_due()
        if not await rt.sleep(0.5):
            return


async def status(rt: Runtime[BidSettings]) -> BidEngineStatus:
    active = len(await rt.bus.backend.smembers(ACTIVE_KEY))
    metrics.ORDERS.set(active)
    return BidEngineStatus(orders=active)


async def watch_balance(rt: Runtime[BidSettings], facts: Facts) -> None:
    """Follow the balance service's status: below ``AP_MINIMUM_BALANCE``, no bids. A status
    older than a minute (the balance service stopped) no longer holds bidding back."""
    while True:
        with contextlib.suppress(ConnectionLost):
            found = await rt.bus.status("balance")
            low: tuple[str, ...] = ()
            if found is not None and isinstance(found.payload, BalanceStatus):
                age = (dt.datetime.now(dt.UTC) - found.time).total_seconds()
                low = tuple(found.payload.below_minimum) if age < BALANCE_STATUS_MAX_AGE_S else ()
            if low and not facts.low_balance:
                log.warning(
                    "the provider's balance of %s is below AP_MINIMUM_BALANCE: no new bids "
                    "until it is topped up",
                    ", ".join(low),
                )
            elif facts.low_balance and not low:
                log.info("the provider's balance is above AP_MINIMUM_BALANCE again: bidding")
            facts.low_balance = low
        if not await rt.sleep(2.0):
            return


async def start(rt: Runtime[BidSettings]) -> None:
    settings = rt.settings
    address = await rt.provider_address(settings.provider_address)
    log.info("bid engine for provider %s", address)
    lcd = await rt.resource(LCDClient(settings.api))
    chain = LCDQueries(lcd)
    facts = Facts(chain, address, settings.required_attributes())
    await rt.wait_for(
        f"the provider's attributes from {settings.api}",
        facts.refresh,
        retry_on=(ChainUnavailable,),
    )
    rt.readiness(lambda: [f"provider attributes: {facts.error}"] if facts.error else [])
    allow, deny = settings.tenants()
    orders = Orders(
        rt.bus,
        chain,
        strategy_of(settings),
        facts,
        BidPolicy(
            provider=address,
            deposit=settings.deposit(),
            bid_timeout=settings.bid_timeout,
            reclamation_window=settings.reclamation_window,
            tenants=TenantPolicy(allow=allow, deny=deny),
        ),
    )

    async def on_provider_changed(msg: Message[ProviderUpdated | AuditorAttributesChanged]) -> None:
        if msg.payload.owner == address:
            facts.invalidate()

    events = rt.subscriber(
        CHAIN_EVENTS, partition_key=order_of, concurrency=settings.bid_concurrency
    )
    events.add(OrderCreated, orders.on_order_created)
    events.add(OrderClosed, orders.on_order_closed)
    events.add(LeaseCreated, orders.on_lease_created)
    events.add(BidClosed, orders.on_bid_closed)
    events.add(ProviderUpdated, on_provider_changed)
    events.add(AuditorAttributesChanged, on_provider_changed)
    results = rt.subscriber(
        CHAIN_RESULTS, partition_key=order_of, concurrency=settings.bid_concurrency
    )
    results.add(TxCommitted, orders.on_tx_committed)
    results.add(TxFailed, orders.on_tx_failed)
    commands = rt.subscriber(BIDENGINE_COMMANDS)

    async def screen(msg: Message[ScreenBid]) -> None:
        await on_screen_bid(orders, msg)

    commands.add(ScreenBid, screen)
    rt.supervise(facts.run(settings.bid_attributes_refresh), "attributes")
    rt.supervise(expire_deadlines(rt, orders), "deadlines")
    rt.supervise(
        keep_catching_up(orders, uuid.uuid4().hex[:8], settings.bid_catchup_interval, rt.sleep),
        "catch-up",
    )
    reconciliation = Reconciliation(orders, grace=settings.bid_reconcile_grace)
    rt.supervise(reconciliation.run(settings.bid_reconcile_interval, rt.sleep), "reconciliation")
    rt.publish_status(lambda: status(rt), rt.settings.bidengine_status_interval)
    rt.supervise(watch_balance(rt, facts), "balance")


SPEC = ServiceSpec(
    name="bidengine",
    title="bid engine",
    summary="orders in, bids out: filtering, pricing, reservations, leases won",
    distribution="akbidengine",
    settings=BidSettings,
    health_listen="0.0.0.0:8093",
    start=start,
    fatal=(ProviderConfigError,),
)
