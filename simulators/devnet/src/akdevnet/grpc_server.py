"""The Cosmos gRPC query server (``--grpc``): the same query methods as ``abci_query``.

A Cosmos node serves its query services over gRPC too (port 9090 by default); chain-sdk's
``createChainNodeSDK`` reads the chain that way. Requests and responses are the same
protobuf bytes as through ``abci_query`` (:mod:`akdevnet.queries`); failures are gRPC
statuses (NotFound, InvalidArgument, Unknown, Unimplemented for a method not served) with
the node's description.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import grpc

from akdevnet.queries import QueryFailure, QueryServices
from akdevnet.settings import split_listen

if TYPE_CHECKING:  # generic in the type stubs only
    _Handler = grpc.GenericRpcHandler[bytes, bytes]
else:
    _Handler = grpc.GenericRpcHandler
Server = grpc.aio.Server
STATUSES = {
    "NotFound": grpc.StatusCode.NOT_FOUND,
    "InvalidArgument": grpc.StatusCode.INVALID_ARGUMENT,
    "Unknown": grpc.StatusCode.UNKNOWN,
    "Unimplemented": grpc.StatusCode.UNIMPLEMENTED,
}


class _Queries(_Handler):
    def __init__(self, queries: QueryServices) -> None:
        self.queries = queries

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        method: str = handler_call_details.method
        if not self.queries.serves(method):
            return None  # grpc answers UNIMPLEMENTED
        return grpc.unary_unary_rpc_method_handler(self._unary(method))

    def _unary(
        self, method: str
    ) -> Callable[[bytes, grpc.aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]:
        async def answer(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            try:
                return self.queries.query(method, request)
            except QueryFailure as failure:
                await context.abort(
                    STATUSES.get(failure.status, grpc.StatusCode.UNKNOWN), failure.detail
                )
                raise  # abort raises; this line is not reached

        return answer


async def serve(queries: QueryServices, listen: str) -> tuple[grpc.aio.Server, str]:
    """Start a gRPC server for ``queries`` on ``listen``; the server and its host:port."""
    host, port = split_listen(listen)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_Queries(queries),))
    bound = server.add_insecure_port(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    await server.start()
    return server, f"{host}:{bound}"
