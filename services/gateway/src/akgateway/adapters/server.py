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
  the connection closes (asyncio drops it).
- Every connection runs against the clock (:class:`akgateway.api.limits.Timeouts`): the TLS
  handshake, a request's headers, its body, and the idle time between requests; a
  connection that stalls or goes quiet is closed, so idle or slow clients hold no sockets.
- Access lines (uvicorn's, for requests and websockets) name the query's parameters but
  not their values (:func:`redacted`): no token or command line reaches the log.
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

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from akgateway import metrics
from akgateway.api.limits import Timeouts
from akservice import StartupError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send
    from uvicorn._types import ASGI3Application

log = logging.getLogger("akgateway.adapters.server")


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


def with_extension(app: ASGIApp, name: str, value: object) -> ASGIApp:
    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), name: value}
        await app(scope, receive, send)

    return asgi


def with_tls(app: ASGIApp, tls: dict[str, Any]) -> ASGIApp:
    return with_extension(app, "tls", tls)


class TLSH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with the connection's TLS details in every request's scope,
    and its clocks (:class:`akgateway.api.limits.Timeouts`): a request's headers must arrive
    within ``headers`` of its first byte (or of the connection's start), its body within
    ``body`` of its headers, and a kept-alive connection may sit idle for ``idle``."""

    def __init__(self, *args: Any, timeouts: Timeouts, listener: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeouts = timeouts
        self.listener = listener
        self.timeout_keep_alive = timeouts.idle  # type: ignore[assignment]  # uvicorn: int
        self._clock: tuple[str, asyncio.TimerHandle] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if isinstance(ssl_object, ssl.SSLObject):
            app = with_tls(cast("ASGIApp", self.config.loaded_app), tls_extension(ssl_object))
            self.app = cast("ASGI3Application", app)
        self._start("headers", self.timeouts.headers)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Run the clock of the step the client is at: its headers, its body, or none (the
        request is in, or the connection is a websocket's now)."""
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            self._stop()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            self._start("headers", self.timeouts.headers)
        elif state is h11.SEND_BODY:
            self._start("body", self.timeouts.body)
        else:
            self._stop()

    def _start(self, step: str, seconds: float) -> None:
        if self._clock is not None and self._clock[0] == step:
            return  # already running for this step
        self._stop()
        self._clock = (step, self.loop.call_later(seconds, self._expired, step))

    def _stop(self) -> None:
        if self._clock is not None:
            self._clock[1].cancel()
            self._clock = None

    def _expired(self, step: str) -> None:
        self._clock = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        metrics.CONNECTIONS_TIMED_OUT.labels(self.listener, step).inc()
        self.transport.close()


CONNECTION_CLOSED = "akgateway.connection_closed"


def connection_closed(scope: Scope) -> asyncio.Event | None:
    """Set once the websocket's connection is gone, whether or not the app was reading it
    (a handler blocked on something else learns the tenant left)."""
    found = (scope.get("extensions") or {}).get(CONNECTION_CLOSED)
    return found if isinstance(found, asyncio.Event) else None


class TLSWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol, with the connection's TLS details in the scope, an
    event set when the connection is lost (:func:`connection_closed`), and an upgrade
    refused with an HTTP answer as one log line (uvicorn's), not three."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.closed = asyncio.Event()
        app = cast("ASGIApp", self.config.loaded_app)
        ssl_object = transport.get_extra_info("ssl_object")
        if isinstance(ssl_object, ssl.SSLObject):
            app = with_tls(app, tls_extension(ssl_object))
        self.app = cast("ASGI3Application", with_extension(app, CONNECTION_CLOSED, self.closed))

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            # a refusal is a finished answer; uvicorn would log an error that it is not
            self.handshake_complete = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        super().connection_lost(exc)


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
    context: ssl.SSLContext,
    inner: Callable[[], asyncio.BaseProtocol],
    listener: str,
    handshake_timeout: float = Timeouts.handshake,
) -> Callable[[], asyncio.BaseProtocol]:
    """A protocol factory for ``loop.create_server`` (without its own ``ssl``): TLS with
    ``context`` through :class:`TLSConnection`, then ``inner`` on the decrypted stream; a
    handshake not done within ``handshake_timeout`` seconds is closed."""

    def made() -> asyncio.BaseProtocol:
        connection = TLSConnection(
            asyncio.get_running_loop(),
            inner(),
            context,
            None,  # type: ignore[arg-type]  # no waiter: nothing awaits the handshake
            server_side=True,
            ssl_handshake_timeout=handshake_timeout,  # type: ignore[arg-type]  # a float works
        )
        connection.listener = listener
        return connection

    return made


def redacted(target: str) -> str:
    """A request's path with its query's values left out (``/?token=***``): queries carry
    the dashboard's token and shells' command lines, which stay out of logs."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    names = [part.partition("=")[0] for part in query.split("&") if part]
    return path + "?" + "&".join(f"{name}=***" for name in names)


def _plain(record: logging.LogRecord) -> bool:
    """Drop uvicorn's terminal-coloured copy of each message from structured logs, and the
    websockets library's line about a refused upgrade (uvicorn's line names it already), and
    the values of the query in the access lines (HTTP and websocket) it writes."""
    record.__dict__.pop("color_message", None)
    if record.msg == "connection rejected (%d %s)":
        return False
    if isinstance(record.args, tuple):
        record.args = tuple(
            redacted(a) if isinstance(a, str) and a.startswith("/") else a for a in record.args
        )
    return True


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
        timeouts: Timeouts | None = None,
    ) -> None:
        timeouts = timeouts or Timeouts()
        self.host, self.port = sock.getsockname()[:2]
        self._sock = sock
        self.graceful_s = graceful_s
        self.name = name
        self.tls = context is not None

        def http(**kwargs: Any) -> asyncio.BaseProtocol:
            """Each connection's protocol, made by uvicorn with its config."""
            plain = TLSH11Protocol(timeouts=timeouts, listener=name, **kwargs)
            if context is None:
                return plain
            return tls_protocol(context, lambda: plain, name, timeouts.handshake)()

        self.config = uvicorn.Config(
            app,
            http=http,  # type: ignore[arg-type]  # uvicorn calls it as it calls a class
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
