"""The operator's dashboard in a real headless Chromium (Debian's), against the whole suite
(balance and the three operators included): it loads with its token, shows the nodes and
the capabilities check's differences, a new order appears without a reload, and every panel
fills, every part of the provider listed.

``DASHBOARD_SCREENSHOT=docs/dashboard.png`` also saves the screenshot there.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.async_api import TimeoutError as PlaywrightTimeout
from playwright.async_api import async_playwright

from akcli.testing import Provider, leased, sdl
from akdevnet.node import PROVIDER_ATTRIBUTES
from akdevnet.testing import DevnetClients
from aktypes.events.streams import SERVICES

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Skipped only on a developer's machine without Chromium; CI installs it (.ci/run), so
# there a missing browser fails the test instead.
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),
    reason="Chromium is not installed (apt install chromium)",
)


# on chain: an h100 the cluster lacks, and no ram class, which it has; beta3 and leased IPs
# are advertised too (the devnet's default), and this cluster has neither
ATTRIBUTES = {
    **{k: v for k, v in PROVIDER_ATTRIBUTES.items() if not k.startswith("capabilities/storage/3/")},
    "capabilities/gpu/vendor/nvidia/model/h100": "true",
}
DIFFERENCES = {
    ("lost orders", "ram (not persistent)"),
    ("failed bids", "beta3 (persistent)"),
    ("failed bids", "nvidia/h100"),
    ("failed bids", "leased IPs"),
}
EVERY_PART_OK = """parts => parts.every(part => [...document.querySelectorAll('#services tr')]
    .some(row => row.cells[0]?.textContent === part && row.cells[1]?.textContent === 'ok'))"""


def short(text: str) -> str:
    return re.sub(r"akash1[0-9a-z]{38}", lambda m: f"{m[0][:10]}…{m[0][-4:]}", text)


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - our own process
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_the_dashboard_shows_nodes_and_a_new_order_live(
    provider: Provider, chain: DevnetClients, tmp_path: Path
) -> None:
    provider.balance_env = {}
    provider.operators = ("hostname", "ip")
    provider.attributes = ATTRIBUTES
    provider.start()
    gateway = provider.gateway
    base = gateway.dashboard_url
    assert status_of(f"{base}/") == 401
    assert status_of(f"{base}/api/view?token=wrong") == 401
    tenant = chain.tenant("tenant-1")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1100})
            await page.goto(f"{base}/?token={gateway.dashboard_token}")
            # the token became a cookie the page cannot read, and left the address
            assert page.url == f"{base}/"
            [cookie] = await page.context.cookies()
            assert (cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (
                True,
                True,
                "Strict",
            )
            assert await page.evaluate("document.cookie") == ""
            nodes = page.locator("#nodes")
            for name in ("big-a", "big-b", "gpu-a"):
                await nodes.get_by_text(name, exact=True).wait_for(timeout=30_000)
            await nodes.get_by_text("nvidia/a100/80Gi/sxm", exact=False).wait_for(timeout=5_000)
            # each difference between the inventory and the chain, on a row of its own
            shown = page.locator("#capabilities tr", has_text="nvidia/h100")
            await shown.wait_for(timeout=30_000)
            rows = await page.locator("#capabilities tr").all_inner_texts()
            found = {
                (cells[0], cells[2])
                for cells in (r.split("\t") for r in rows[1:])
                if len(cells) >= 3
            }
            assert found == DIFFERENCES, rows
            assert "capabilities/gpu/vendor/nvidia/model/h100=true" in await shown.inner_text()
            said = await page.locator("#capabilities-state").inner_text()
            assert said.startswith("4 difference(s) with akash1"), said
            await page.evaluate("window.stillTheSamePage = true")
            [lease] = await leased(provider, tenant, sdl(cpu=0.5))
            order = short(str(lease.order_id))  # addresses are shortened on the page
            row = page.locator("#orders tr", has_text=order)
            await row.wait_for(timeout=30_000)
            assert await row.locator("td").first.get_attribute("title") == str(lease.order_id)
            try:
                await page.locator("#events td", has_text=f"bid on {order}").first.wait_for(
                    timeout=20_000
                )
            except PlaywrightTimeout:
                shown = await page.locator("#events").inner_text()
                raise AssertionError(
                    f"no 'bid on {order}' among the events shown:\n{shown}"
                ) from None
            await page.locator("#leases tr", has_text=short(str(lease))).wait_for(timeout=30_000)
            assert await page.evaluate("window.stillTheSamePage") is True  # no reload
            assert "won" in (await row.inner_text())
            # every panel has content: each part of the provider reports, earnings included
            try:
                await page.wait_for_function(EVERY_PART_OK, arg=list(SERVICES), timeout=30_000)
            except PlaywrightTimeout:
                shown = await page.locator("#services").inner_text()
                raise AssertionError(f"not every part reports, ok:\n{shown}") from None
            await page.locator("#earnings", has_text="leases watched").wait_for(timeout=30_000)
            assert await page.locator("#totals > *").count() >= 2  # cpu, memory
            assert await page.locator("#capacity path").count() == 3
            await page.locator("#bids rect").first.wait_for(timeout=30_000)
            shot = tmp_path / "dashboard.png"
            await page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            if target := os.environ.get("DASHBOARD_SCREENSHOT"):
                shutil.copy(shot, target)
        finally:
            await browser.close()
    assert gateway.dashboard_token not in gateway.log()  # the access log drops query values
