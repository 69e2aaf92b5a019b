"""`KubeSim`: the store, the HTTP API, the controllers and the fault switches, together.

    async with KubeSim(ClusterSpec.load(path)) as sim:
        sim.url               # http://127.0.0.1:PORT
        sim.write_kubeconfig(tmp / "kubeconfig")
        sim.faults.unavailable(5)

    KubeSim(users=Users({"t0ken": User("alice")}))  # RBAC on: see kubesim.authz
    KubeSim(tls=True)  # https, its CA in the kubeconfigs it writes: see kubesim.tls

In-process it binds a free port on 127.0.0.1; `python -m kubesim serve` runs the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from aiohttp import web

from kubesim import kubeconfig
from kubesim.authz import ADMIN_TOKEN, Users
from kubesim.cluster import DEFAULT_CLUSTER, ClusterSpec
from kubesim.controllers import Controllers, ControllerSettings
from kubesim.execs import AccessLog, ExecRunner
from kubesim.faults import Faults
from kubesim.logs import LogSource
from kubesim.sandbox import Sandbox
from kubesim.server import ApiServer
from kubesim.store import Store
from kubesim.tls import ServerTLS, self_signed


class KubeSim:
    def __init__(
        self,
        cluster: ClusterSpec = DEFAULT_CLUSTER,
        *,
        kube_version: str = "1.32",
        controllers: ControllerSettings | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        history: int = 10_000,
        bookmark_interval: float = 5.0,
        log_interval: float = 1.0,
        users: Users | None = None,
        tls: bool = False,
        tls_hosts: Sequence[str] = (),
        sandbox: Sandbox | None = None,
    ) -> None:
        self.cluster = cluster
        self.host = host
        self.port = port
        self.tls: ServerTLS | None = None
        self._ssl: ssl.SSLContext | None = None
        if tls:
            self.tls = self_signed([host, "127.0.0.1", "localhost", *tls_hosts])
            self._ssl = self.tls.server_context()
        self.store = Store(kube_version=kube_version, history=history)
        self.faults = Faults()
        git_version = f"v{kube_version}.0" if kube_version.count(".") == 1 else f"v{kube_version}"
        self.api = ApiServer(
            self.store,
            self.faults,
            LogSource(log_interval),
            git_version=git_version,
            bookmark_interval=bookmark_interval,
            users=users,
            execs=ExecRunner(sandbox=sandbox),
        )
        self.controllers = Controllers(
            self.store, self.faults, cluster, controllers or ControllerSettings(), git_version
        )
        self.faults.on_change.append(self._fault_changed)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> KubeSim:
        self.controllers.bootstrap()
        self.controllers.reconcile()
        self.api.execs.prepare()
        self._runner = web.AppRunner(
            self.api.app,
            handle_signals=False,
            shutdown_timeout=1.0,
            access_log_class=AccessLog,
        )
        await self._runner.setup()
        await self._listen()
        self._tasks.append(asyncio.create_task(self.controllers.run(), name="kubesim-controllers"))
        return self

    async def _listen(self) -> None:
        if self._runner is None:
            raise RuntimeError("kubesim is not started")
        self._site = web.TCPSite(
            self._runner, self.host, self.port, reuse_address=True, ssl_context=self._ssl
        )
        await self._site.start()
        server = self._site._server  # the bound port, when asked for port 0
        if self.port == 0 and isinstance(server, asyncio.Server) and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self.store.close_watches()
        if self._site is not None:
            await _stop_accepting(self._site)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> KubeSim:
        return await self.start()

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.stop()

    def write_kubeconfig(
        self, path: Path, server_url: str = "", *, token: str = ADMIN_TOKEN
    ) -> Path:
        """A kubeconfig for this server at ``path``; ``server_url`` when clients reach it
        by another address than the one served; ``token``: whose it is (with users)."""
        ca = self.tls.ca_pem if self.tls else None
        return kubeconfig.write(path, server_url or self.url, token=token, ca_pem=ca)

    def _fault_changed(self) -> None:
        if self.faults.is_unavailable():
            self.store.close_watches()  # an outage drops every open watch
            if self.faults.refuse and self._site is not None:
                self._tasks.append(
                    asyncio.create_task(self._refuse_for(self.faults.unavailable_until))
                )

    async def _refuse_for(self, until: float) -> None:
        """Close the listening socket until `until`, then listen on the same port again."""
        site, self._site = self._site, None
        if site is None:
            return
        await _stop_accepting(site)
        await site.stop()
        await asyncio.sleep(max(until - time.monotonic(), 0))
        if self._runner is not None:
            await self._listen()


async def _stop_accepting(site: web.TCPSite) -> None:
    """Stop accepting connections, and let those already accepted settle, before the
    listening socket is closed: on Python 3.11 a connection accepted just before
    `Server.close()` fails to attach to the closed server and its socket is leaked."""
    server = site._server
    if not isinstance(server, asyncio.Server):
        return
    loop = asyncio.get_running_loop()
    for sock in server.sockets:
        loop.remove_reader(sock.fileno())
    for _ in range(2):  # an accepted connection becomes a transport within one iteration
        await asyncio.sleep(0)
