"""The gateway process: Akash's tenant REST API over mTLS, on the service runtime, and the
operator's dashboard and the gRPC API (:mod:`akgateway.api.rpc`) on listeners of their own.

Start: learn the provider's address (``AP_PROVIDER_ADDRESS``, else the chain relay's
status), load its certificate (``<AP_GATEWAY_TLS_DIR>/<address>.pem``; missing: a one-line
fatal error naming the command that makes it), read every on-chain certificate into the
TLS trust store, then serve HTTPS on ``AP_GATEWAY_LISTEN`` (ready once listening), keep
the trust store current and renew the provider's certificate before it expires
(:mod:`akgateway.renewal`). With a public certificate configured (its files, or ACME), it is
served beside the provider's for the public hostnames (:func:`start_public_tls`). Every
answer comes from the bus (requests to the manifest and cluster services, retained
statuses) or the chain; the only state the gateway keeps is the renewal's record and
ACME's files.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import ssl
from typing import Any

from akchain.lcd import LCDClient
from akgateway.adapters.chain import AccountKeys, CertificateLookup, ChainCertificates
from akgateway.adapters.grpcfront import GRPCFront, PeerCertificates
from akgateway.adapters.kube import LeaseCluster
from akgateway.adapters.public_tls import PublicTLS
from akgateway.adapters.server import HTTPServer, bind
from akgateway.adapters.tls import TrustedCertificates, server_context
from akgateway.api.app import create_app
from akgateway.api.context import Gateway
from akgateway.api.dashboard import DashboardFeed, create_dashboard
from akgateway.api.fastpath import lease_status_fast_path
from akgateway.api.limits import InputRate, TenantSlots, body_limit, route_limit
from akgateway.api.rpc import RPCServer
from akgateway.buildinfo import build_info
from akgateway.domain.certificates import ProviderCertificate, read_provider_pem
from akgateway.domain.status import renderer
from akgateway.errors import CertificateFileError, ChainUnavailable, PublicCertificateError
from akgateway.handlers import LeaseStatuses, StatusBoard, status_fast_path
from akgateway.renewal import CertificateRenewal
from akgateway.settings import GatewaySettings
from akservice import Runtime, ServiceSpec, StartupError
from akservice.runtime import version_of
from akservice.settings import listen_address
from aktypes.events import GatewayStatus
from aktypes.events.streams import SERVICES

log = logging.getLogger("akgateway")

GENERATE = "python -m akgateway cert generate"
PUBLISH = "python -m akgateway cert publish"


def load_certificate(settings: GatewaySettings, address: str) -> ProviderCertificate:
    path = settings.certificate_path(address)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CertificateFileError(
            f"no provider certificate at {path} (AP_GATEWAY_TLS_DIR): create it with "
            f"`{GENERATE}`, then put it on chain with `{PUBLISH}`"
        ) from None
    except OSError as exc:
        raise CertificateFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return read_provider_pem(data, address, str(path))


async def start(rt: Runtime[GatewaySettings]) -> None:
    settings = rt.settings
    address = await rt.provider_address(settings.provider_address)
    own = load_certificate(settings, address)
    await asyncio.to_thread(build_info)  # read once, here: it may ask git, which blocks
    context = server_context(settings.certificate_path(address))
    sock = bind(*settings.listen(), "AP_GATEWAY_LISTEN")  # a busy port fails now, not later
    lcd = await rt.resource(LCDClient(settings.api))
    grpc_context = server_context(settings.certificate_path(address), alpn=("h2",))
    public = public_tls(settings, context, grpc_context)
    contexts = (context, grpc_context, *(public.contexts if public else ()))
    trusted = TrustedCertificates(contexts, ChainCertificates(lcd))
    renewal = CertificateRenewal(
        rt.bus,
        settings,
        address,
        (context, grpc_context),
        own,
        chain=CertificateLookup(lcd, 0),
    )
    await renewal.step()  # a renewed certificate from the record, when it is the later one
    own = renewal.served
    await rt.wait_for(
        f"the on-chain certificates from {settings.api}", trusted.sync, retry_on=(ChainUnavailable,)
    )
    if not trusted.trusts(own.der):
        log.warning(
            "the provider's certificate %s is not on chain: tenants' tools will refuse this "
            "gateway until it is published (`%s`)",
            own.serial,
            PUBLISH,
        )
    board = StatusBoard(
        rt.bus,
        SERVICES,  # every part of the provider, the gateway itself included
        renderer(
            address=address,
            public_hostname=settings.cluster_public_hostname,
            max_age=settings.gateway_status_max_age,
        ),
    )
    rt.supervise(board.run(), "statuses")
    leases = None
    if settings.gateway_lease_status_max_age > 0:
        leases = LeaseStatuses(rt.bus, settings.gateway_lease_status_max_age)
        rt.supervise(leases.run(), "lease statuses")
    kube = None
    if settings.cluster_backend == "kube":
        kube = await rt.resource(LeaseCluster.from_kubeconfig(settings.kubeconfig))
    gateway = Gateway(
        bus=rt.bus,
        board=board,
        settings=settings,
        provider=address,
        certificates=CertificateLookup(lcd, settings.gateway_cert_cache_ttl),
        accounts=AccountKeys(lcd, settings.gateway_cert_cache_ttl),
        version=version_of("akgateway"),
        kube=kube,
        leases=leases,
        slots=TenantSlots(
            settings.gateway_tenant_max_websockets, settings.gateway_tenant_max_shells
        ),
        input_rate=InputRate(settings.gateway_tenant_shell_input_rate),
    )

    async def own_status() -> GatewayStatus:
        websockets, shells, tenants = gateway.slots.counts()
        return GatewayStatus(
            websockets=websockets, shells=shells, tenants=tenants, version=gateway.version
        )

    rt.publish_status(own_status, settings.gateway_status_interval)
    server = await rt.resource(
        HTTPServer(
            body_limit(
                status_fast_path(lease_status_fast_path(create_app(gateway), gateway), board),
                route_limit(settings.gateway_max_body, settings.gateway_max_request_body),
                listener="tenant API",
            ),
            context,
            sock,
            graceful_s=max(rt.config.bus.drain_timeout_s - 1.5, 0.5),
            timeouts=settings.timeouts(),
        )
    )
    rt.readiness(lambda: [] if server.listening else ["the tenant API is not listening"])
    rt.supervise(server.watch(), "http")
    await start_dashboard(rt, board)
    await start_rpc(rt, gateway, grpc_context)
    if public is not None:
        await start_public_tls(rt, public)
    rt.supervise(trusted.run(settings.gateway_cert_sync_interval, rt.sleep), "certificates")
    rt.supervise(renewal.run(settings.gateway_cert_renew_interval, rt.sleep), "certificate renewal")
    log.info("gateway for provider %s", address, extra={"certificate": own.serial})


async def start_rpc(
    rt: Runtime[GatewaySettings], gateway: Gateway, context: ssl.SSLContext
) -> None:
    """The gRPC API on its own port, if one is configured: grpcio on loopback behind the
    tenant API's TLS (:mod:`akgateway.adapters.grpcfront`)."""
    where = rt.settings.grpc_listen()
    if where is None:
        return
    sock = bind(*where, "AP_GATEWAY_GRPC_LISTEN")  # a busy port fails now, with its setting
    peers = PeerCertificates()
    server = await rt.resource(RPCServer(gateway, peers))
    front = await rt.resource(GRPCFront(context, sock, ("127.0.0.1", server.port), peers))
    log.info("gRPC on %s:%s", front.host, front.port)
    rt.readiness(lambda: [] if server.port else ["the gRPC API is not listening"])


async def start_dashboard(rt: Runtime[GatewaySettings], board: StatusBoard) -> None:
    """The operator's dashboard on its own listener, if one is configured."""
    settings = rt.settings
    where = settings.dashboard_listen()
    if where is None:
        return
    sock = bind(*where, "AP_GATEWAY_DASHBOARD_LISTEN")
    token = settings.gateway_dashboard_token.get_secret_value()
    made = not token
    token = token or secrets.token_urlsafe(24)
    feed = DashboardFeed(rt.bus, board)
    rt.supervise(feed.run_events(), "dashboard events")
    rt.supervise(feed.run_capacity(), "dashboard capacity")
    dashboard = await rt.resource(
        HTTPServer(
            body_limit(
                create_dashboard(feed, token),
                lambda _, __: settings.gateway_max_request_body,
                listener="dashboard",
            ),
            None,
            sock,
            graceful_s=0.5,
            name="dashboard",
            timeouts=settings.timeouts(),
        )
    )
    rt.supervise(dashboard.watch(), "dashboard")
    host, port = dashboard.host, dashboard.port
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - only shown
    if made:  # kept in a file only its owner reads, never in the log
        path = settings.gateway_tls_dir / "dashboard.token"
        path.unlink(missing_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(token + "\n")
        log.info(
            "dashboard: http://%s:%s/?token=… with the token in %s "
            "(made at start: AP_GATEWAY_DASHBOARD_TOKEN unset)",
            shown,
            port,
            path,
        )
    else:
        log.info("dashboard: http://%s:%s/", shown, port)


def public_tls(
    settings: GatewaySettings, context: ssl.SSLContext, grpc_context: ssl.SSLContext
) -> PublicTLS | None:
    """The public certificate beside the on-chain one on both TLS listeners, if one is
    configured (its files, or ACME); served once loaded (:func:`start_public_tls`)."""
    files = settings.public_files()
    if files is None:
        return None
    public = PublicTLS(settings.public_hostnames(), *files, alpns=((), ("h2",)))
    public.route(context, public.contexts[0])
    public.route(grpc_context, public.contexts[1])
    return public


async def start_public_tls(rt: Runtime[GatewaySettings], public: PublicTLS) -> None:
    """Serve the public certificate and follow its files; with ACME, the challenge's
    listener and the task that orders and renews it."""
    settings = rt.settings
    if not settings.gateway_acme_directory:
        if not public.load():  # what the operator configured must be there at start
            raise PublicCertificateError(
                f"no public certificate at {public.cert_file} and {public.key_file} "
                "(AP_GATEWAY_TLS_CERT, AP_GATEWAY_TLS_KEY)"
            )
    else:
        # imported here: the ACME library (requests, josepy) loads only where ACME is on
        from akgateway.adapters.acme import AcmeConfig, AcmeIssuer  # noqa: PLC0415

        public.check()  # ACME's own files: missing or unusable, it orders a new pair
        solvers = await start_acme_solvers(rt)
        config = AcmeConfig(
            directory=settings.gateway_acme_directory,
            hostnames=public.hostnames,
            folder=settings.acme_dir(),
            challenge=settings.gateway_acme_challenge,
            email=settings.gateway_acme_email,
            ca_file=settings.gateway_acme_ca_file,
            eab_kid=settings.gateway_acme_eab_kid,
            eab_hmac=settings.gateway_acme_eab_hmac.get_secret_value(),
            dns_wait=settings.gateway_acme_dns_wait,
            retry=settings.gateway_acme_retry_interval,
        )
        rt.supervise(AcmeIssuer(config, public, **solvers).run(rt.sleep), "acme")
    rt.supervise(public.run(settings.gateway_tls_reload_interval, rt.sleep), "public certificate")


async def start_acme_solvers(rt: Runtime[GatewaySettings]) -> dict[str, Any]:
    """What answers the configured ACME challenge: HTTP-01's or TLS-ALPN-01's listener, or
    DNS-01's hook."""
    from akgateway.adapters.acme_solvers import (  # noqa: PLC0415 - as AcmeIssuer
        ALPNChallenges,
        DNSHook,
        HTTPChallenges,
    )

    settings = rt.settings
    hook = settings.gateway_acme_dns_hook
    if settings.gateway_acme_challenge == "dns-01" and hook:  # the settings require one
        if not (hook.is_file() and os.access(hook, os.X_OK)):
            raise StartupError(f"AP_GATEWAY_ACME_DNS_HOOK={hook}: not an executable file")
        return {"dns": DNSHook(hook)}
    if settings.gateway_acme_challenge == "tls-alpn-01":
        host, port = listen_address(settings.gateway_acme_tls_listen)
        sock = bind(host, port, "AP_GATEWAY_ACME_TLS_LISTEN")
        return {"alpn": await rt.resource(ALPNChallenges(sock))}
    http = HTTPChallenges()
    host, port = listen_address(settings.gateway_acme_http_listen)
    sock = bind(host, port, "AP_GATEWAY_ACME_HTTP_LISTEN")
    server = await rt.resource(
        HTTPServer(http.app(), None, sock, graceful_s=0.5, name="ACME HTTP-01 listener")
    )
    rt.supervise(server.watch(), "acme http-01")
    return {"http": http}


SPEC = ServiceSpec(
    name="gateway",
    title="gateway",
    summary="Akash's tenant REST API over mTLS: manifests, lease status, provider status "
    "(`python -m akgateway cert --help`: the provider's certificate)",
    distribution="akgateway",
    settings=GatewaySettings,
    health_listen="0.0.0.0:8095",
    start=start,
    fatal=(CertificateFileError, PublicCertificateError),
)
