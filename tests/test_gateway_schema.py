"""The gateway under generated requests: every operation of its OpenAPI document, with a
tenant's client certificate, with a tenant's token, and with no credentials, never answers a
server error.

Every process is real (devnet, Redis, relay, kubesim, cluster, bid engine, manifest,
gateway). Schemathesis reads ``/openapi.json`` from the running gateway and generates
requests from it (valid ones and ones that break the schema); the check is Schemathesis's
``not_a_server_error``: any 5xx is a failure (every service is up, so not even a 503).
One lease exists, so lease routes also meet a lease that is there.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck
from schemathesis.checks import not_a_server_error

from akcli.testing import Provider, certified, flow, sdl
from akdevnet.testing import DevnetClients

EXAMPLES = 25  # per operation and credential: enough to reach every branch of the parsing


Credentials = tuple[tuple[str, str] | None, dict[str, str]]  # (client certificate, headers)


def exercise(operation: Any, url: str, credentials: Credentials) -> int:
    """Generated requests for one operation, on one keep-alive session; how many were sent."""
    sent = 0
    session = requests.Session()

    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.given(case=operation.as_strategy())
    def one(case: Any) -> None:
        nonlocal sent
        cert, headers = credentials
        kwargs: dict[str, Any] = {"verify": False, "timeout": 30, "headers": headers}
        if cert is not None:
            kwargs["cert"] = cert
        response = case.call(base_url=url, session=session, **kwargs)
        sent += 1
        case.validate_response(response, checks=[not_a_server_error])

    with session:
        one()
    return sent


def run_operations(url: str, credentials: Credentials) -> dict[str, int]:
    """Generated requests for every operation; how many were sent per operation."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", verify=False)
    sent = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        sent[f"{operation.method.upper()} {operation.path}"] = exercise(operation, url, credentials)
    return sent


# The provider's certificate names no loopback address; who the server is is not what this
# test is about.
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.timeout(400)  # about a minute here; some three thousand requests on a slow machine
async def test_no_generated_request_gets_a_server_error(
    provider: Provider, chain: DevnetClients, tmp_path: Path
) -> None:
    provider.start()
    tenant = chain.tenant()
    certificate = await certified(tenant, provider)
    await flow(provider, tenant, certificate, sdl(cpu=0.5), "one lease")
    cert_file, key_file = certificate.save(tmp_path, "tenant")
    url = provider.gateway.url
    documented = set(provider_operations(url))

    assert {"POST /hostname/migrate", "POST /endpoint/migrate"} <= documented
    anonymous = await asyncio.to_thread(run_operations, url, (None, {}))
    tenant_calls = await asyncio.to_thread(
        run_operations, url, ((str(cert_file), str(key_file)), {})
    )
    token = {"Authorization": f"Bearer {tenant.token()}"}
    token_calls = await asyncio.to_thread(run_operations, url, (None, token))
    assert set(anonymous) == set(tenant_calls) == set(token_calls) == documented
    assert all(n >= 1 for n in tenant_calls.values()), tenant_calls
    assert all(n >= 1 for n in token_calls.values()), token_calls
    assert provider.gateway.running()  # nothing brought it down


def provider_operations(url: str) -> list[str]:
    """The operations the running gateway documents."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"{url}/openapi.json", context=context) as answer:  # noqa: S310
        document = json.load(answer)
    return [f"{m.upper()} {p}" for p, methods in document["paths"].items() for m in methods]
