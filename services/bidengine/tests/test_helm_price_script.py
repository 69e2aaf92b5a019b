"""Akash's own Helm price script (``price_script_generic.sh``, kept unchanged under
``data/helm-charts/``) under the bid engine's ``shellScript`` strategy, as real processes.

The script prices in USD per month and converts to the order's denomination per block; for
``uakt`` it needs the AKT price, which it fetches from public APIs and keeps for an hour in
``/tmp/aktprice.cache``. Nothing can be fetched here, so each test writes that cache first
(a fresh file: the script reads it and calls no API) — which is also how an operator without
outside access seeds it.
"""

from __future__ import annotations

import hashlib
import shutil
from decimal import Decimal, localcontext
from pathlib import Path

import pytest

from akbidengine.adapters.price_script import ShellScriptStrategy
from akbidengine.domain.pricing import PriceRequest, PricingError
from akbidengine.testing import HELM_PRICE_SCRIPT as HELM
from akbidengine.testing import akt_price
from aktypes.coin import DecCoin
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "libs/aktypes/tests/data/awesome-akash"
OWNER = "akash1tenant"
BLOCKS_A_MONTH = 429909  # the script's
SHA256 = "48a75c9bc192c3d349c11f7c6b11377df3ceb1de2a0c2da17c313fccd8cf5bd7"


def request(denom: str = "uact") -> PriceRequest:
    """Ace-Music-AI: 4 CPU, 16 GiB, 100 GiB ephemeral, 200 GiB beta3, 1 endpoint, 1 GPU of
    any model; the order's maximum is 10 000 per block."""
    group = parse_sdl((CORPUS / "Ace-Music-AI.yaml").read_bytes()).groups[0]
    group = group.model_copy(
        update={
            "resources": [
                u.model_copy(update={"price": DecCoin(denom=denom, amount=u.price.amount)})
                for u in group.resources
            ]
        }
    )
    return PriceRequest(owner=OWNER, group=group)


def rate(usd_per_month: str, usd_per_coin: str = "1") -> Decimal:
    """The script's arithmetic: micro-units of the coin per block, 6 places."""
    with localcontext() as ctx:
        ctx.prec = 50
        value = Decimal(usd_per_month) / Decimal(usd_per_coin) * 10**6 / BLOCKS_A_MONTH
        return value.quantize(Decimal("0.000001"))


def test_the_script_is_akashs_unchanged_and_its_tools_are_here() -> None:
    text = HELM.read_text()
    assert hashlib.sha256(HELM.read_bytes()).hexdigest() == SHA256  # as its README says
    assert text.startswith("#!/bin/bash\n")
    assert "# curl jq bc mawk ca-certificates" in text  # what it says it needs
    missing = [tool for tool in ("bash", "curl", "jq", "bc", "mawk") if shutil.which(tool) is None]
    assert missing == [], (
        f"install {' '.join(missing)} (Debian: apt-get install {' '.join(missing)})"
    )


async def test_it_prices_an_order_in_uact_with_its_default_targets() -> None:
    # 4×1.60 + 16×0.80 + 100×0.02 + 200×0.04 + 1×0.05 + 1 GPU × 100 = 129.25 USD a month
    with akt_price("0.5"):
        price = await ShellScriptStrategy(HELM).price(request())
    assert price.denom == "uact"
    assert price.amount.to_decimal() == rate("129.25")


async def test_uakt_is_priced_at_the_cached_akt_price() -> None:
    with akt_price("0.5"):
        price = await ShellScriptStrategy(HELM).price(request("uakt"))
    assert price.denom == "uakt"
    assert price.amount.to_decimal() == rate("129.25", "0.5")
    with akt_price("0.25"):
        cheaper_akt = await ShellScriptStrategy(HELM).price(request("uakt"))
    assert cheaper_akt.amount.to_decimal() == rate("129.25", "0.25")


async def test_a_gpu_of_no_given_model_is_priced_at_the_highest_mapping() -> None:
    env = {"PATH": "/usr/bin:/bin", "PRICE_TARGET_GPU_MAPPINGS": "a100=120,h100=300"}
    with akt_price("0.5"):
        price = await ShellScriptStrategy(HELM, env=env).price(request())
    assert price.amount.to_decimal() == rate("329.25")  # 129.25 - 100 + 300


async def test_an_order_whose_maximum_is_below_the_rate_gets_no_bid() -> None:
    env = {"PATH": "/usr/bin:/bin", "PRICE_TARGET_CPU": "100000"}
    with akt_price("0.5"), pytest.raises(PricingError) as refused:
        await ShellScriptStrategy(HELM, env=env).price(request())
    assert refused.value.code == "script_failed"
    assert "requested rate is too low" in str(refused.value)
