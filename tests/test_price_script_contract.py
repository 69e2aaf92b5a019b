"""The ``shellScript`` price strategy across real processes: what the bid engine hands the
operator's script (stdin, environment), and what becomes of what the script answers — the
bid on chain, or a ``BidDeclined`` naming why there is none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from akbidengine.domain.order import record_key
from akbidengine.domain.pricing import PriceRequest, script_stdin
from akbidengine.testing import HELM_PRICE_SCRIPT, akt_price
from akbus import Bus
from akcli.testing import Provider, sdl, stream
from akcluster.reservations import RESERVATIONS_KEY
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.coin import Dec
from aktypes.events import BidDeclined
from aktypes.events.streams import BIDENGINE_EVENTS
from aktypes.ids import DeploymentID
from aktypes.sdl import SDL

EXAMPLE = Path(__file__).parents[1] / "services" / "bidengine" / "examples" / "price_script.sh"


def script(provider: Provider, body: str, *, timeout: str = "2s", **env: str) -> Path:
    """``body`` as the bid engine's price script (a Python program), ready to start."""
    path = provider.tmp / "price_script.py"
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    provider.bidengine_env = {
        "AP_BID_PRICE_STRATEGY": "shellScript",
        "AP_BID_PRICE_SCRIPT_PATH": str(path),
        "AP_BID_PRICE_SCRIPT_PROCESS_TIMEOUT": timeout,
        **env,
    }
    return path


def order_of(deployment: DeploymentID) -> str:
    return str(deployment.group(1).order(1))


async def our_bid(chain: DevnetClients, deployment: DeploymentID) -> Any:
    me = chain.wallet("provider").address

    async def found() -> Any:
        bids = await chain.lcd.bids(
            owner=deployment.owner, dseq=deployment.dseq, provider=me, state=None
        )
        return bids[0] if len(bids) == 1 else None

    return await eventually(found, timeout_s=30, what=f"our bid on {deployment.dseq}")


async def declined(bus: Bus, count: int) -> dict[str, list[Any]]:
    async def found() -> dict[str, list[Any]]:
        reasons = {
            str(e.payload.order_id): e.payload.reasons
            for e in await stream(bus, BIDENGINE_EVENTS)
            if isinstance(e.payload, BidDeclined)
        }
        return reasons if len(reasons) >= count else {}

    return await eventually(found, timeout_s=30, what=f"{count} BidDeclined")


async def price_request(chain: DevnetClients, deployment: DeploymentID, bid: Any) -> PriceRequest:
    """What the engine priced: the order's group on chain and the offer its bid carries."""
    order = await chain.lcd.order(deployment.group(1).order(1))
    return PriceRequest(deployment.owner, order.spec, tuple(bid.resources_offer))


# -- 5. the bid is what the script printed, for what the contract gave it ----------------------

RECORDING = """
import json, os, sys
from decimal import Decimal
from pathlib import Path

data = sys.stdin.buffer.read()
run = Path(__file__).parent / "runs" / str(os.getpid())
run.mkdir(parents=True)
(run / "stdin").write_bytes(data)
(run / "env.json").write_text(json.dumps({k: os.environ.get(k) for k in ("AKASH_OWNER", "AKASH_DENOM")}))
order = json.loads(data)
cpu = sum(r["cpu"] * r["count"] for r in order["resources"])  # millicpu
print(Decimal(cpu) / 1000 * 7 + Decimal("0.123456"))
"""


async def test_the_bid_is_what_the_script_prints_for_the_order_on_its_stdin(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    path = script(provider, RECORDING)
    provider.start()
    tenant = chain.tenant("tenant-2")
    small = await tenant.deploy(sdl(cpu=0.5))
    large = await tenant.deploy(sdl(cpu=2, count=2))
    expected = {small: Dec("3.623456"), large: Dec("28.123456")}  # 7 per CPU + 0.123456

    runs = path.parent / "runs"
    for deployment, price in expected.items():
        bid = await our_bid(chain, deployment)
        assert bid.state == "open"
        assert (bid.price.denom, bid.price.amount) == ("uact", price)

        # the stdin of the run that priced it is Go's contract for this order, byte for byte
        request = await price_request(chain, deployment, bid)
        cpu = sum(o.resources.cpu_millis * o.count for o in bid.resources_offer)
        [run] = [
            r
            for r in runs.iterdir()
            if sum(
                u["cpu"] * u["count"] for u in json.loads((r / "stdin").read_text())["resources"]
            )
            == cpu
        ]
        stdin = (run / "stdin").read_bytes()
        assert stdin == script_stdin(request)
        data = json.loads(stdin)
        [unit] = data["resources"]
        assert unit == {
            "memory": 512 * 2**20,
            "cpu": cpu // bid.resources_offer[0].count,
            "gpu": {"units": 0, "attributes": {}},
            "storage": [{"class": "ephemeral", "size": 2**30}],
            "count": bid.resources_offer[0].count,
            "endpoint_quantity": 1,
            "ip_lease_quantity": 0,
        }
        assert data["price"]["denom"] == "uact"
        assert Dec(data["price"]["amount"]) == Dec("100000") * unit["count"]
        assert data["price_precision"] == 6
        assert json.loads((run / "env.json").read_text()) == {
            "AKASH_OWNER": tenant.address,
            "AKASH_DENOM": "uact",
        }
    assert len(list(runs.iterdir())) == 2  # one run per order


# -- 6. no price, no bid: a slow script, a failing one, one printing garbage -------------------

DISPATCHING = """
import json, os, subprocess, sys, time
from pathlib import Path

order = json.load(sys.stdin)
mebibytes = order["resources"][0]["memory"] >> 20
if mebibytes == 256:  # too slow: it and its child are killed at the timeout
    child = subprocess.Popen(["sleep", "60"])
    (Path(__file__).parent / "slow.pids").write_text(f"{os.getpid()} {child.pid}")
    time.sleep(60)
elif mebibytes == 384:
    print("no deal for this tenant today", file=sys.stderr)
    sys.exit(1)
elif mebibytes == 640:
    print("lots of uact")
else:
    print("2.5")
"""


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie nobody reaped yet."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


async def test_a_slow_failing_or_garbage_script_means_no_bid_and_a_reason(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    path = script(provider, DISPATCHING, timeout="2s")
    provider.start()
    tenant = chain.tenant("tenant-1")
    cases = {
        "script_timeout": await tenant.deploy(sdl(memory="256Mi")),
        "script_failed": await tenant.deploy(sdl(memory="384Mi")),
        "script_output": await tenant.deploy(sdl(memory="640Mi")),
    }
    priced = await tenant.deploy(sdl(memory="512Mi"))
    bid = await our_bid(chain, priced)  # the script works for what it can price
    assert (bid.price.denom, bid.price.amount) == ("uact", Dec("2.5"))

    reasons = await declined(bus, len(cases))
    assert set(reasons) == {order_of(d) for d in cases.values()}
    for code, deployment in cases.items():
        [reason] = reasons[order_of(deployment)]
        assert reason.code == code, (code, reason)
        assert await tenant.bids(deployment.dseq, state=None) == []  # no bid from anyone
        stored = await bus.backend.get(record_key(order_of(deployment)))
        assert stored is not None
        assert json.loads(stored)["state"] == "declined"
    messages = {code: reasons[order_of(d)][0].message for code, d in cases.items()}
    assert "no deal for this tenant today" in messages["script_failed"]
    assert "exited with status 1" in messages["script_failed"]
    assert "2s" in messages["script_timeout"]
    assert "lots of uact" in messages["script_output"]

    # the slow script and the process it started were killed, not left running
    pids = [int(p) for p in (path.parent / "slow.pids").read_text().split()]
    await eventually(lambda: all(gone(p) for p in pids), what="the slow script's processes gone")
    # the reservations made for the declined orders were released
    assert set(await bus.backend.hgetall(RESERVATIONS_KEY)) == {order_of(priced)}


# -- 7. the shipped example script --------------------------------------------------------------

TARGETS = {  # the example's settings, all different from its defaults
    "PRICE_TARGET_CPU": "2.40",
    "PRICE_TARGET_MEMORY": "1.20",
    "PRICE_TARGET_HD_EPHEMERAL": "0.05",
    "PRICE_TARGET_HD_PERS_SSD": "0.07",
    "PRICE_TARGET_ENDPOINT": "0.10",
    "BLOCKS_PER_MONTH": "100000",
}


async def test_the_example_script_prices_corpus_orders_as_it_does_by_hand(
    provider: Provider, chain: DevnetClients, bus: Bus, corpus: Callable[[str], SDL]
) -> None:
    example = provider.tmp / "price_script.sh"
    shutil.copy(EXAMPLE, example)
    example.chmod(0o755)
    provider.bidengine_env = {
        "AP_BID_PRICE_STRATEGY": "shellScript",
        "AP_BID_PRICE_SCRIPT_PATH": str(example),
        "AP_BID_PRICE_SCRIPT_PROCESS_TIMEOUT": "5s",
        **TARGETS,
    }
    provider.start()
    tenant = chain.tenant("tenant-3")
    # a persistent beta2 volume beside an ephemeral one; a group of four resource units
    deployments = [await tenant.deploy(corpus(n)) for n in ("vaultwarden.yaml", "discourse.yaml")]
    for deployment in deployments:
        bid = await our_bid(chain, deployment)
        request = await price_request(chain, deployment, bid)
        by_hand = subprocess.run(
            [str(example)],
            input=script_stdin(request),
            env={
                "PATH": os.environ["PATH"],
                **TARGETS,
                "AKASH_OWNER": tenant.address,
                "AKASH_DENOM": "uact",
            },
            capture_output=True,
            check=True,
            timeout=10,
        )
        printed = by_hand.stdout.decode().strip()
        assert (bid.price.denom, bid.price.amount) == ("uact", Dec(printed)), deployment
        assert Dec(printed) > Dec("0.000001")  # a real price, not the precision floor
    assert not [
        e for e in await stream(bus, BIDENGINE_EVENTS) if isinstance(e.payload, BidDeclined)
    ]


# -- 8. Akash's own Helm script, unchanged ------------------------------------------------------


async def test_akashs_helm_price_script_prices_the_bid(
    provider: Provider, chain: DevnetClients, bus: Bus
) -> None:
    provider.bidengine_env = {
        "AP_BID_PRICE_STRATEGY": "shellScript",
        "AP_BID_PRICE_SCRIPT_PATH": str(HELM_PRICE_SCRIPT),
        "AP_BID_PRICE_SCRIPT_PROCESS_TIMEOUT": "10s",
    }
    with akt_price("0.5"):  # its AKT price cache, since the price APIs are out of reach
        provider.start()
        deployment = await chain.tenant("tenant-1").deploy(sdl(cpu=2))
        bid = await our_bid(chain, deployment)
    # the script's default targets, USD a month: 2 CPU × 1.60 + 0.5 GiB × 0.80 + 1 GiB
    # ephemeral × 0.02 + 1 endpoint × 0.05 = 3.67, in uact (1 USD = 10⁶ uact) per block
    # (429 909 blocks a month), to 6 places
    expected = (Decimal("3.67") * 10**6 / 429909).quantize(Decimal("0.000001"))
    assert (bid.price.denom, bid.price.amount) == ("uact", Dec(str(expected)))
    assert not [
        e for e in await stream(bus, BIDENGINE_EVENTS) if isinstance(e.payload, BidDeclined)
    ]
