"""uvicorn inside the service runtime: the socket, the TLS details in each request's scope,
a graceful stop when the runtime stops.

- The socket is bound here, so a busy port is one clear start-up error naming
  ``AP_GATEWAY_LISTEN`` (uvicorn would ``sys.exit`` from inside a task).
- :class:`TLSH11Protocol` and :class:`TLSWebSocketProtocol` put the connection's client
  certificate in every request's scope as the ASGI TLS extension
  (``scope["extensions"]["tls"]["client_cert_chain"]``, PEM), which uvicorn does not do.
  It is read from the connection, never from a header, and proxy headers are off: nothing
  a client sends can change who it is.
- TLS is asyncio's, through :class:`TLSConnection`, which adds what a server facing the
  public needs: a refused handshake is one log line saying why (the client certificate's
  problem, or OpenSSL's reason) and a metric, and the TLS alert OpenSSL wrote is sent before
  the connection closes (asyncio drops it). A handshake that does not finish within
  ``HANDSHAKE_TIMEOUT_S`` is closed.
- Signals belong to the runtime: uvicorn's own handlers are not installed. On SIGTERM the
  runtime exits its resources; :class:`HTTPServer` then stops accepting, lets requests in
  flight finish (``graceful_s``), and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
from asyncio import sslproto
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from akgateway import metrics
from akservice import StartupError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send
    from uvicorn._types import ASGI3Application

log = logging.getLogger("akgateway.server")


def tls_extension(ssl_object: ssl.SSLObject) -> dict[str, Any]:
    """The ASGI TLS extension for a connection (client certificate as PEM, if any)."""
    der = ssl_object.getpeercert(binary_form=True)
    version = ssl_object.version()
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": 0x0304 if version == "TLSv1.3" else None,
        "cipher_suite": None,
    }


def with_tls(app: ASGIApp, tls: dict[str, Any]) -> ASGIApp:
    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), "tls": tls}
        await app(scope, receive, send)

    return asgi


class TLSH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with the connection's TLS details in every request's scope."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if isinstance(ssl_object, ssl.SSLObject):
            app = with_tls(cast("ASGIApp", self.config.loaded_app), tls_extension(ssl_object))
            self.app = cast("ASGI3Application", app)


class TLSWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol, with the connection's TLS details in the scope; an
    upgrade refused with an HTTP answer is one log line (uvicorn's), not three."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if isinstance(ssl_object, ssl.SSLObject):
            app = with_tls(cast("ASGIApp", self.config.loaded_app), tls_extension(ssl_object))
            self.app = cast("ASGI3Application", app)

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            # a refusal is a finished answer; uvicorn would log an error that it is not
            self.handshake_complete = True


HANDSHAKE_TIMEOUT_S = 10

# OpenSSL's verify results for a client certificate, in the words a tenant understands
CLIENT_CERT_PROBLEMS = {
    "unable to get local issuer certificate": "it is not a certificate published on chain "
    "(or the gateway has not read it yet)",
    "self-signed certificate": "it is not a certificate published on chain "
    "(or the gateway has not read it yet)",
    "unsuitable certificate purpose": "it may not be used for client authentication",
}


def refusal(exc: BaseException) -> tuple[str, str]:
    """Why a handshake failed: a short reason for the metric, and a sentence for the log."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        problem = exc.verify_message or str(exc)
        return "client_certificate", "client certificate refused: " + CLIENT_CERT_PROBLEMS.get(
            problem, problem
        )
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return exc.reason.lower(), exc.reason.lower().replace("_", " ")
    return "other", str(exc) or type(exc).__name__


class TLSConnection(sslproto.SSLProtocol):
    """asyncio's server-side TLS for one connection, with a refused handshake logged (one
    line) and its alert sent. ``listener`` names the listener in the log and the metric."""

    listener = "tenant API"

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if handshake_exc is not None:
            reason, why = refusal(handshake_exc)
            peer = self._transport.get_extra_info("peername") if self._transport else None
            metrics.TLS_REFUSED.labels(self.listener, reason).inc()
            log.warning(
                "TLS handshake refused on the %s: %s",
                self.listener,
                why,
                extra={"peer": f"{peer[0]}:{peer[1]}" if peer else None, "reason": reason},
            )
            with contextlib.suppress(Exception):
                # the alert OpenSSL wrote, which asyncio would drop (typeshed lacks the method)
                self._process_outgoing()  # type: ignore[attr-defined]
        super()._on_handshake_complete(handshake_exc)


def tls_protocol(
    context: ssl.SSLContext, inner: Callable[[], asyncio.BaseProtocol], listener: str
) -> Callable[[], asyncio.BaseProtocol]:
    """A protocol factory for ``loop.create_server`` (without its own ``ssl``): TLS with
    ``context`` through :class:`TLSConnection`, then ``inner`` on the decrypted stream."""

    def made() -> asyncio.BaseProtocol:
        connection = TLSConnection(
            asyncio.get_running_loop(),
            inner(),
            context,
            None,  # type: ignore[arg-type]  # no waiter: nothing awaits the handshake
            server_side=True,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
        )
        connection.listener = listener
        return connection

    return made


def _plain(record: logging.LogRecord) -> bool:
    """Drop uvicorn's terminal-coloured copy of each message from structured logs, and the
    websockets library's line about a refused upgrade (uvicorn's line names it already)."""
    record.__dict__.pop("color_message", None)
    return record.msg != "connection rejected (%d %s)"


for _name in ("uvicorn.error", "uvicorn.access"):
    logging.getLogger(_name).addFilter(_plain)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the runtime owns SIGTERM/SIGINT and stops us through HTTPServer.__aexit__


def bind(host: str, port: int, variable: str) -> socket.socket:
    """A socket bound to ``host:port`` but not listening yet: connections are refused until
    the server starts, and a busy port is known at once (``variable`` names the setting)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say TCP;
    # with it on, a response written in two parts waits for the client's delayed ACK (40 ms)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = (
            "the address is already in use"
            if exc.errno == errno.EADDRINUSE
            else (exc.strerror or str(exc))
        )
        raise StartupError(f"cannot listen on {host}:{port} ({variable}): {reason}") from None
    return sock


class HTTPServer:
    """The app served over TLS on ``sock`` (from :func:`bind`) while the block runs (an
    async context manager for :meth:`akservice.Runtime.resource`)."""

    def __init__(
        self,
        app: ASGIApp,
        context: ssl.SSLContext | None,
        sock: socket.socket,
        *,
        graceful_s: float,
        name: str = "tenant API",
    ) -> None:
        self.host, self.port = sock.getsockname()[:2]
        self._sock = sock
        self.graceful_s = graceful_s
        self.name = name
        self.tls = context is not None
        http: Any = TLSH11Protocol
        if context is not None:  # uvicorn makes each connection's protocol with its config

            def http(**kwargs: Any) -> asyncio.BaseProtocol:
                return tls_protocol(context, lambda: TLSH11Protocol(**kwargs), name)()

        self.config = uvicorn.Config(
            app,
            http=http,
            ws=TLSWebSocketProtocol,
            ws_ping_interval=10.0,  # Akash's: a ping every 10 s, a pong within 15 s
            ws_ping_timeout=15.0,
            ws_max_size=1024 * 1024,
            lifespan="off",
            log_config=None,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=max(int(graceful_s), 1),
        )
        self.server = _Server(self.config)
        self._task: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        return self.server.started and self._task is not None and not self._task.done()

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self.server.serve(sockets=[self._sock]), name="uvicorn")
        while not self.server.started:
            if self._task.done():
                self._task.result()  # its error, if any
                raise StartupError(f"the {self.name} on {self.host}:{self.port} did not start")
            await asyncio.sleep(0.01)
        scheme = "https" if self.tls else "http"
        log.info("%s listening", self.name, extra={"url": f"{scheme}://{self.host}:{self.port}"})
        return self

    async def watch(self) -> None:
        """Wait while the server runs (a supervised task; its cancellation leaves the server
        to :meth:`__aexit__`)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.should_exit = True
        if self._task is not None:
            try:
                async with asyncio.timeout(self.graceful_s + 1.0):
                    await asyncio.shield(self._task)
            except TimeoutError:
                self._task.cancel()
                log.warning("requests still running at shutdown were cut off")
            except Exception:
                log.exception("the HTTP server failed while stopping")
        self._sock.close()
