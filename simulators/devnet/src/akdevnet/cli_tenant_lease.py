"""``akdevnet tenant lease-status|service-status|lease-manifest|close``: a tenant's leases
once they run — what the provider's gateway says of them, with the certificate ``tenant
cert`` saved, and closing their deployment.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from akdevnet.cli_common import (
    BadOption,
    Dseq,
    Home,
    KeyName,
    Lcd,
    Node,
    ProviderUrl,
    VerifyProvider,
    load_key,
    required_certificate,
    run,
    settings_of,
    tenant_app,
    with_tenant,
)
from akdevnet.tenant import ClientCertificate, Tenant

MAX_UINT32 = 2**32 - 1
Gseq = Annotated[int, typer.Option(min=1, max=MAX_UINT32, help="group sequence")]
Oseq = Annotated[int, typer.Option(min=1, max=MAX_UINT32, help="order sequence")]


async def _lease_gateway(
    tenant: Tenant, dseq: int, gseq: int, oseq: int, provider_url: str | None
) -> tuple[str, str]:
    """The provider of the tenant's lease ``dseq/gseq/oseq`` and its gateway's URL."""
    leases = await tenant.lcd.leases(owner=tenant.address, dseq=dseq)
    found = sorted(
        (lease for lease in leases if (lease.id.gseq, lease.id.oseq) == (gseq, oseq)),
        key=lambda lease: lease.state != "active",
    )
    if not found:
        await tenant.check_active(dseq)
        raise LookupError(f"deployment {dseq} has no lease {gseq}/{oseq}")
    provider = found[0].id.provider
    return provider, provider_url or (await tenant.lcd.provider(provider)).host_uri


def _show(url: str, answer: tuple[int, Any]) -> str:
    status, body = answer
    if status == 200:
        return json.dumps(body, indent=2, sort_keys=True)
    message = body.get("message") if isinstance(body, dict) else body
    raise BadOption(f"{url}: HTTP {status}: {message}")


def _lease_query(
    what: Callable[[Tenant, str, ClientCertificate, str | None], Awaitable[tuple[int, Any]]],
    target: tuple[int, int, int, str | None, bool],
    *,
    key: str,
    home: Path | None,
    node: str | None,
    lcd: str | None,
) -> None:
    settings = settings_of(home)
    signer = load_key(settings, key)
    certificate = required_certificate(settings, key)
    dseq, gseq, oseq, provider_url, verify = target

    async def work(tenant: Tenant) -> str:
        provider, url = await _lease_gateway(tenant, dseq, gseq, oseq, provider_url)
        answer = await what(tenant, url, certificate, provider if verify else None)
        return _show(url, answer)

    typer.echo(run(with_tenant(settings, signer, node, lcd, work)))


@tenant_app.command("lease-status")
def tenant_lease_status(
    *,
    dseq: Dseq,
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """A lease's services, forwarded ports and IPs, from the provider's gateway."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.lease_status(dseq, gseq, oseq, url, certificate, provider=provider)

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("service-status")
def tenant_service_status(
    *,
    dseq: Dseq,
    service: Annotated[str, typer.Argument(help="service name in the SDL")],
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """One service of a lease, from the provider's gateway."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.service_status(
            dseq, gseq, oseq, service, url, certificate, provider=provider
        )

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("lease-manifest")
def tenant_lease_manifest(
    *,
    dseq: Dseq,
    gseq: Gseq = 1,
    oseq: Oseq = 1,
    provider_url: ProviderUrl = None,
    key: KeyName = "tenant-1",
    home: Home = None,
    node: Node = None,
    lcd: Lcd = None,
    verify_provider: VerifyProvider = True,
) -> None:
    """The manifest group the provider deployed for a lease."""

    async def what(
        tenant: Tenant, url: str, certificate: ClientCertificate, provider: str | None
    ) -> tuple[int, Any]:
        return await tenant.lease_manifest(dseq, gseq, oseq, url, certificate, provider=provider)

    target = (dseq, gseq, oseq, provider_url, verify_provider)
    _lease_query(what, target, key=key, home=home, node=node, lcd=lcd)


@tenant_app.command("close")
def tenant_close(
    *, dseq: Dseq, key: KeyName = "tenant-1", home: Home = None, node: Node = None, lcd: Lcd = None
) -> None:
    """Close a deployment (its leases close and the rest of the deposit is refunded)."""
    settings = settings_of(home)
    signer = load_key(settings, key)

    async def work(tenant: Tenant) -> None:
        await tenant.close(dseq)

    run(with_tenant(settings, signer, node, lcd, work))
    typer.echo(f"closed {dseq}")
