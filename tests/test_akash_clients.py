"""Akash's own client code (chain-sdk, cosmjs from the npm registry, run with Node) against
the running provider: the certificate Akash Console makes, its manifest, its gRPC client.

One provider for the module (devnet, Redis, relay, kubesim, every service, gateway).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from akchain import msgs
from akcli.akashjs import AkashJS
from akcli.testing import Provider, leased, whole_suite
from akdevnet.testing import DevnetClients
from akservice.testing import eventually
from aktypes.sdl import parse_sdl

CORPUS = Path(__file__).parents[1] / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"


def test_the_pinned_client_packages_are_installed_and_run(akashjs: AkashJS) -> None:
    answer = akashjs.run("probe.mjs", {"ping": 1})
    assert answer["echo"] == {"ping": 1}
    assert answer["chainSdk"] == "1.0.0-alpha.25"
    assert answer["stargate"] == "0.39.0"
    assert set(answer["exports"]) >= {"createProviderSDK"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with whole_suite(tmp_path_factory.mktemp("suite")) as provider:
        yield provider


@pytest.fixture
async def chain(suite: Provider) -> AsyncIterator[DevnetClients]:
    async with suite.devnet.clients() as clients:
        yield clients


async def test_a_console_tenant_sends_its_manifest_and_reads_its_lease_with_sdk_certificate(
    suite: Provider, chain: DevnetClients, akashjs: AkashJS
) -> None:
    """chain-sdk's certificate generator and SDL tools, Node's TLS client: the manifest is
    accepted over mTLS and the lease status lists the running service."""
    tenant = chain.tenant("tenant-1")
    yaml = (CORPUS / "tetris.yaml").read_text()
    made, manifest = akashjs.run(
        "tenant.mjs",
        {
            "steps": [
                {"do": "certificate", "address": tenant.address},
                {"do": "manifest", "sdl": yaml},
            ]
        },
    )
    assert "\r\n" in made["cert"]
    assert made["publicKey"].startswith("-----BEGIN EC PUBLIC KEY-----")
    shape = parse_sdl(yaml)
    assert manifest["version"] == shape.manifest_version.hex()
    await tenant.wallet.send(
        msgs.create_certificate(tenant.address, made["cert"].encode(), made["publicKey"].encode())
    )
    [lease] = await leased(suite, tenant, shape)
    base = f"{suite.gateway.url}"
    mtls = {"cert": made["cert"], "key": made["privateKey"]}

    def call(method: str, path: str, body: str | None = None) -> dict[str, Any]:
        step = {"do": "request", "method": method, "url": base + path, **mtls}
        if body is not None:
            step["body"] = body
        [answer] = akashjs.run("tenant.mjs", {"steps": [step]})
        return answer

    def trusted() -> dict[str, Any] | None:  # published a moment ago: read on the next sync
        answer = call("PUT", f"/deployment/{lease.dseq}/manifest", manifest["body"])
        return answer if answer["status"] else None

    put = await eventually(trusted, timeout_s=30, what="the manifest accepted over mTLS")
    assert (put["status"], put["body"]) == (200, None), put

    path = f"/lease/{lease.dseq}/{lease.gseq}/{lease.oseq}/status"

    def running() -> dict[str, Any] | None:
        answer = call("GET", path)
        services = (answer["body"] or {}).get("services") if answer["status"] == 200 else None
        return answer if services and services["tetris"]["available"] == 1 else None

    status = await eventually(running, timeout_s=60, what="the lease running")
    assert status["body"]["services"]["tetris"]["total"] == 1
