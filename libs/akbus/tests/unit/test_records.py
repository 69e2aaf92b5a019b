"""Records on the in-memory bus: transitions, what each write keeps beside the record, guards."""

from __future__ import annotations

import logging
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from akbus import Bus, BusTx, Change, Records
from akbus.testing import memory_bus
from aktypes.events import UnreserveResources, envelope_from_fields
from aktypes.events.streams import CLUSTER_COMMANDS
from aktypes.ids import OrderID
from aktypes.testing import address

log = logging.getLogger("test.records")


class Item(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    state: Literal["open", "busy", "done"] = "open"
    count: int = 0


def records(bus: Bus) -> Records[Item]:
    return Records(
        bus,
        Item,
        "test:item:",
        active="test:active",
        schedule="test:due",
        final=lambda item: item.state == "done",
        final_ttl_s=3600,
        log=log,
        noun="item",
    )


def unreserve(n: int) -> UnreserveResources:
    return UnreserveResources(order_id=OrderID(owner=address(1), dseq=n, gseq=1, oseq=1))


async def published(bus: Bus) -> list[object]:
    return [
        envelope_from_fields(e.fields).payload for e in await bus.backend.entries(CLUSTER_COMMANDS)
    ]


@pytest.fixture
def bus() -> Bus:
    return memory_bus()


async def test_a_transition_creates_changes_and_finishes_a_record(bus: Bus) -> None:
    items = records(bus)
    before, after = await items.update("a", lambda before: before or Item(name="a"))
    assert before is None
    assert after == Item(name="a")
    assert await items.get("a") == after
    assert await bus.backend.get("test:item:a") == after.model_dump_json()
    assert await items.members() == {"a"}
    assert await items.due(1e12) == []  # no due time: not scheduled

    def start(before: Item | None) -> Change[Item] | None:
        assert before is not None
        return Change(before.model_copy(update={"state": "busy"}), due=50.0)

    before, after = await items.update("a", start)
    assert (before, after) == (Item(name="a"), Item(name="a", state="busy"))
    assert await items.due(100.0) == [("a", 50.0)]
    assert await items.due(10.0) == []

    def finish(before: Item | None) -> Item | None:
        return before.model_copy(update={"state": "done"}) if before else None

    await items.update("a", finish)
    assert await items.get("a") == Item(name="a", state="done")
    assert await items.members() == set()  # final: out of the active set
    assert await items.due(100.0) == []  # and off the schedule


async def test_none_changes_nothing_and_a_change_without_record_still_writes_the_rest(
    bus: Bus,
) -> None:
    items = records(bus)
    assert await items.update("a", lambda _: None) == (None, None)
    assert await items.get("a") is None
    assert await items.members() == set()

    def note(tx: BusTx) -> None:
        tx.state.hset("test:notes", {"a": "seen"})

    change: Change[Item] = Change(publish=[(CLUSTER_COMMANDS, unreserve(1))], writes=note)
    assert await items.update("a", lambda _: change) == (None, None)
    assert await items.get("a") is None  # the record stays absent
    assert await published(bus) == [unreserve(1)]
    assert await bus.backend.hgetall("test:notes") == {"a": "seen"}


async def test_the_events_of_a_change_are_published_with_it(bus: Bus) -> None:
    items = records(bus)
    events = [(CLUSTER_COMMANDS, unreserve(1)), (CLUSTER_COMMANDS, unreserve(2))]
    await items.update("a", lambda _: Change(Item(name="a"), publish=events))
    assert await published(bus) == [unreserve(1), unreserve(2)]


async def test_a_stale_snapshot_commits_nothing(bus: Bus) -> None:
    items = records(bus)
    await items.update("a", lambda _: Item(name="a"))
    stale = await items.read("a")
    await items.update("a", lambda b: b.model_copy(update={"count": 1}) if b else None)
    late = Change(Item(name="a", count=99), publish=[(CLUSTER_COMMANDS, unreserve(1))])
    assert not await items.commit(stale, late)
    assert await items.get("a") == Item(name="a", count=1)
    assert await published(bus) == []  # nothing of a refused change is written
    assert await items.commit(await items.read("a"), late)
    assert await items.get("a") == Item(name="a", count=99)


async def test_a_record_changed_meanwhile_is_read_again_and_the_transition_rerun(
    bus: Bus,
) -> None:
    items = records(bus)
    await items.update("a", lambda _: Item(name="a", count=5))
    seen: list[Item | None] = []

    def bump(before: Item | None) -> Item:
        seen.append(before)
        return (before or Item(name="a")).model_copy(
            update={"count": (before or Item(name="a")).count + 1}
        )

    # "absent" assumes no record: the guard (absent) fails, the record is read, bump reruns
    before, after = await items.update("a", bump, absent=True)
    assert seen == [None, Item(name="a", count=5)]
    assert before == Item(name="a", count=5)
    assert after == Item(name="a", count=6)
    assert await items.get("a") == after


async def test_many_records_are_read_in_one_call_in_order(bus: Bus) -> None:
    items = records(bus)
    for name in ("a", "c"):
        await items.update(name, lambda _, name=name: Item(name=name))
    assert await items.get_many(["c", "b", "a"]) == [Item(name="c"), None, Item(name="a")]


async def test_the_schedule_is_kept_by_hand_too(bus: Bus) -> None:
    items = records(bus)
    await items.reschedule("a", 7.0)
    assert await items.due(10.0) == [("a", 7.0)]
    await items.reschedule("a", None)
    assert await items.due(10.0) == []


async def test_each_change_of_state_is_logged_once(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    items = records(bus)
    with caplog.at_level(logging.INFO, logger="test.records"):
        await items.update("a", lambda _: Item(name="a"))
        await items.update("a", lambda b: b.model_copy(update={"count": 1}) if b else None)
        await items.update("a", lambda b: b.model_copy(update={"state": "done"}) if b else None)
    lines = [(r.getMessage(), getattr(r, "item_id", None)) for r in caplog.records]
    assert lines == [("item a: new -> open", "a"), ("item a: open -> done", "a")]


class Paid(BaseModel):
    model_config = ConfigDict(frozen=True)

    denom: str
    total: int

    @classmethod
    def parse(cls, text: str) -> Paid:
        denom, _, total = text.partition(":")
        return cls(denom=denom, total=int(total))

    def __str__(self) -> str:
        return f"{self.denom}:{self.total}"


async def test_records_kept_in_another_form_read_and_write_it(bus: Bus) -> None:
    paid = Records(bus, Paid, "test:paid:", load=Paid.parse, dump=str)

    async def old(tx: BusTx) -> None:
        tx.state.set("test:paid:x", "uact:40")

    await bus.transact(old)  # as written before records existed
    assert await paid.get("x") == Paid(denom="uact", total=40)
    await paid.update("x", lambda b: b.model_copy(update={"total": 45}) if b else None)
    assert await bus.backend.get("test:paid:x") == "uact:45"


async def test_without_an_active_set_or_schedule_asking_for_them_is_an_error(bus: Bus) -> None:
    plain = Records(bus, Item, "test:plain:")
    await plain.update("a", lambda _: Item(name="a", state="done"))
    assert await plain.get("a") == Item(name="a", state="done")
    with pytest.raises(ValueError, match="no active set"):
        await plain.members()
    with pytest.raises(ValueError, match="no schedule"):
        await plain.due(1.0)


async def test_a_transition_may_delete_its_record(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    items = records(bus)
    await items.update("a", lambda _: Change(Item(name="a"), due=3.0))
    with caplog.at_level(logging.INFO, logger="test.records"):
        before, after = await items.update("a", lambda _: Change(delete=True))
        await items.update("b", lambda _: Change(delete=True))  # nothing there: nothing logged
    assert (before, after) == (Item(name="a"), None)
    assert await items.get("a") is None
    assert await items.members() == set()
    assert await items.due(10.0) == []
    assert [r.getMessage() for r in caplog.records] == ["item a: open -> deleted"]
    with pytest.raises(ValueError, match="not both"):
        Change(Item(name="a"), delete=True)


async def test_records_in_a_hash_keep_no_expiry(bus: Bus) -> None:
    with pytest.raises(ValueError, match="cannot expire"):
        Records(bus, Item, "", in_hash="test:items", final_ttl_s=60)
    items = Records(bus, Item, "", in_hash="test:items")
    await items.update("a", lambda _: Item(name="a", state="done"))
    assert await bus.backend.hgetall("test:items") == {
        "a": Item(name="a", state="done").model_dump_json()
    }
    assert await items.all() == {"a": Item(name="a", state="done")}
