"""A tenant's tools against the gateway: ``akdevnet tenant cert``, ``send-manifest``,
``lease-status``, ``service-status`` and ``lease-manifest`` as subprocesses, on a lease the
devnet really holds, with the provider's certificate checked against the chain."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from akchain import msgs
from akdevnet.tenant import ClientCertificate
from akdevnet.testing import TEST_PASSPHRASE
from aktypes.coin import Coin
from aktypes.events import (
    GetLeaseStatus,
    LeaseManifestReport,
    LeaseQueryFailed,
    LeaseStatusReport,
    ServiceStatus,
    SubmitManifest,
)
from aktypes.ids import BidID
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[3] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
TETRIS_FILE = CORPUS / "tetris.yaml"
TETRIS = parse_sdl(TETRIS_FILE.read_text())
GROUP = TETRIS.manifest.groups[0]
SERVICE = GROUP.services[0].name


def akdevnet(stack: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AKDEVNET_")}
    env["AKDEVNET_KEY_PASSPHRASE"] = TEST_PASSPHRASE
    return subprocess.run(
        [sys.executable, "-m", "akdevnet", *args, "--home", str(stack.devnet.home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


async def _lease(stack: Any) -> int:
    async with stack.devnet.clients() as chain:
        tenant = chain.tenant("tenant-1")
        deployment = await tenant.deploy(TETRIS)
        orders = await chain.lcd.orders(owner=tenant.address, dseq=deployment.dseq, state="open")
        provider = chain.wallet("provider")
        for order in orders:
            oid = order.id
            bid_id = BidID(
                owner=oid.owner,
                dseq=oid.dseq,
                gseq=oid.gseq,
                oseq=oid.oseq,
                provider=provider.address,
            )
            deposit = Coin(denom="uakt", amount=500_000)
            await provider.send(msgs.create_bid(bid_id, order.spec.price(), deposit))
        await tenant.accept(deployment.dseq, provider.address)
        return deployment.dseq


@pytest.fixture(scope="module")
def lease(stack: Any) -> int:
    """A deployment of tenant-1 leased to the provider (bid placed by hand); its dseq."""
    return asyncio.run(_lease(stack))


@pytest.fixture(scope="module")
def certificate(stack: Any) -> ClientCertificate:
    made = akdevnet(stack, "tenant", "cert")
    assert made.returncode == 0, made.stderr
    saved = ClientCertificate(
        (stack.devnet.home / "certs" / "tenant-1.crt").read_bytes(),
        (stack.devnet.home / "certs" / "tenant-1.key").read_bytes(),
    )
    stack.wait_trusted((saved.cert_pem, saved.key_pem))
    return saved


def test_send_manifest_uses_the_saved_certificate(
    stack: Any, lease: int, certificate: ClientCertificate
) -> None:
    stack.services.reset()
    sent = akdevnet(stack, "tenant", "send-manifest", str(lease), "--sdl", str(TETRIS_FILE))
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == f"{stack.provider} https://127.0.0.1:{stack.port}: HTTP 200"
    [command] = stack.services.seen
    assert isinstance(command, SubmitManifest)
    assert command.deployment_id.owner == stack.devnet.signer("tenant-1").address
    assert command.deployment_id.dseq == lease
    assert command.manifest == TETRIS.manifest


def test_lease_service_and_manifest_queries(
    stack: Any, lease: int, certificate: ClientCertificate
) -> None:
    def answer(command: Any) -> Any:
        if isinstance(command, GetLeaseStatus):
            service = ServiceStatus(name=SERVICE, available=1, total=1, ready_replicas=1)
            return LeaseStatusReport(lease_id=command.lease_id, services={SERVICE: service})
        return LeaseManifestReport(lease_id=command.lease_id, version="cd" * 32, group=GROUP)

    stack.services.reset()
    stack.services.cluster = answer
    status = akdevnet(stack, "tenant", "lease-status", str(lease))
    assert status.returncode == 0, status.stderr
    body = json.loads(status.stdout)
    assert body["services"][SERVICE]["ready_replicas"] == 1
    assert body["forwarded_ports"] == {}
    assert body["ips"] is None  # Go's answer for a lease without leased IPs
    one = akdevnet(stack, "tenant", "service-status", str(lease), SERVICE, "--gseq", "1")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["name"] == SERVICE
    group = akdevnet(stack, "tenant", "lease-manifest", str(lease))
    assert group.returncode == 0, group.stderr
    assert json.loads(group.stdout) == GROUP.go_dict()
    owner = stack.devnet.signer("tenant-1").address
    assert {str(c.lease_id) for c in stack.services.seen} == {
        f"{owner}/{lease}/1/1/{stack.provider}"
    }


def test_query_errors_are_one_line(stack: Any, lease: int, certificate: ClientCertificate) -> None:
    stack.services.reset()
    stack.services.cluster = lambda c: LeaseQueryFailed(
        lease_id=c.lease_id, code="not_found", message="no service nothing"
    )
    missing = akdevnet(stack, "tenant", "service-status", str(lease), "nothing")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"error: https://127.0.0.1:{stack.port}: HTTP 404: no service nothing"
    ]
    no_lease = akdevnet(stack, "tenant", "lease-status", str(lease), "--oseq", "2")
    assert no_lease.returncode == 1
    assert f"deployment {lease} has no lease 1/2" in no_lease.stderr


async def test_the_provider_must_present_its_on_chain_certificate(
    stack: Any, certificate: ClientCertificate
) -> None:
    async with stack.devnet.clients() as chain:
        tenant = chain.tenant("tenant-1")
        url = stack.gateway.url
        status, _ = await tenant.lease_status(9, 1, 1, url, certificate, provider=stack.provider)
        assert status == 404  # the stand-in's answer: the TLS check passed
        with pytest.raises(aiohttp.ClientConnectorCertificateError):  # another account's cert
            await tenant.lease_status(9, 1, 1, url, certificate, provider=tenant.address)
        with pytest.raises(LookupError, match="has no valid certificate on chain"):
            await tenant.lease_status(
                9, 1, 1, url, certificate, provider=chain.wallet("tenant-2").address
            )
