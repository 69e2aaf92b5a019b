"""The gRPC API's TLS: the tenant API's TLS in front of grpcio, so gRPC takes client
certificates as Akash's Go provider does (requested, not required).

grpcio can request a client certificate only by requiring one, and then checks it with its
own TLS library: the public status would be closed to clients without a certificate, and
Akash's certificates (``keyUsage`` without ``digitalSignature``) refused. So the gRPC
listener is a relay: :class:`GRPCFront` does the TLS handshake exactly as the tenant API
does (:class:`akgateway.adapters.server.TLSConnection`, the on-chain certificates as trust anchors,
ALPN ``h2``), then copies each connection's decrypted bytes to and from grpcio, which
listens on loopback without TLS. The relay remembers which client certificate each of its
loopback connections carries (:class:`PeerCertificates`, by the relay's local address,
which grpcio reports as the call's peer); a call's certificate is checked as a REST
request's is (:func:`akgateway.api.auth.by_certificate`).

The loopback port is not a way around TLS: a connection that does not come from the relay
carries no certificate, and tokens are bearer credentials on any transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from types import TracebackType
from typing import Self

from akgateway.adapters.server import tls_protocol

log = logging.getLogger("akgateway.adapters.grpcfront")

CHUNK = 64 * 1024


class PeerCertificates:
    """The client certificate (DER) of each relayed connection, by the relay's address."""

    def __init__(self) -> None:
        self._by_address: dict[str, bytes] = {}

    def __len__(self) -> int:
        return len(self._by_address)

    def add(self, address: str, der: bytes) -> None:
        self._by_address[address] = der

    def remove(self, address: str) -> None:
        self._by_address.pop(address, None)

    def of(self, peer: str) -> bytes | None:
        """The certificate of a call whose peer grpcio reports as ``peer``
        (``ipv4:127.0.0.1:PORT``); None when it presented none or did not come through us."""
        kind, _, address = peer.partition(":")
        return self._by_address.get(address) if kind == "ipv4" else None


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()


class GRPCFront:
    """TLS on ``sock`` (from :func:`akgateway.adapters.server.bind`) relayed to grpcio on
    ``backend`` while the block runs (an async context manager for
    :meth:`akservice.Runtime.resource`)."""

    def __init__(
        self,
        context: ssl.SSLContext,
        sock: socket.socket,
        backend: tuple[str, int],
        peers: PeerCertificates,
    ) -> None:
        self.context = context
        self.host, self.port = sock.getsockname()[:2]
        self._sock = sock
        self.backend = backend
        self.peers = peers
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()

    def _protocol(self) -> asyncio.BaseProtocol:
        return asyncio.StreamReaderProtocol(asyncio.StreamReader(limit=CHUNK), self._accepted)

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._relay(reader, writer))
        self._relays.add(task)
        task.add_done_callback(self._relays.discard)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.backend)
        except OSError as exc:
            log.warning("the gRPC server is not reachable", extra={"error": str(exc)})
            writer.close()
            return
        host, port = up_writer.get_extra_info("sockname")[:2]
        address = f"{host}:{port}"
        if der:
            self.peers.add(address, der)
        try:
            copies = {
                asyncio.create_task(_copy(reader, up_writer)),
                asyncio.create_task(_copy(up_reader, writer)),
            }
            try:
                await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in copies:
                    task.cancel()
                await asyncio.gather(*copies, return_exceptions=True)
        finally:
            self.peers.remove(address)
            for each in (up_writer, writer):
                each.close()

    async def __aenter__(self) -> Self:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            tls_protocol(self.context, self._protocol, "gRPC API"), sock=self._sock
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._relays):
            task.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await self._server.wait_closed()
