"""`python -m kubesim serve`: a simulated cluster as a server process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from aktypes.duration import parse_duration
from kubesim.authz import Users
from kubesim.cluster import DEFAULT_CLUSTER, ClusterSpec
from kubesim.controllers import CONTROLLERS, ControllerSettings
from kubesim.sandbox import Sandbox
from kubesim.sim import KubeSim

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
log = logging.getLogger("kubesim")


@app.callback()
def main() -> None:
    """kubesim: a local Kubernetes API server simulator."""


@app.command()
def serve(
    port: Annotated[int, typer.Option(help="port to listen on (0: any free port)")] = 6443,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    nodes: Annotated[Path | None, typer.Option(help="YAML file of the cluster's nodes")] = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="write a kubeconfig for the server here")
    ] = None,
    server_url: Annotated[
        str,
        typer.Option(
            help="the server's URL in that kubeconfig, when clients reach it by another name "
            "(a container's: http://kubesim:6443); default: the address served"
        ),
    ] = "",
    kube_version: Annotated[
        str, typer.Option(help="Kubernetes version served and validated against")
    ] = "1.32",
    pod_start_delay: Annotated[float, typer.Option(help="seconds from scheduled to Running")] = 0.5,
    crash_interval: Annotated[
        float, typer.Option(help="seconds between a crash-looping container's restarts")
    ] = 1.0,
    event_ttl: Annotated[
        str,
        typer.Option(
            help="how long an Event is kept after its last write, as kube-apiserver's "
            "--event-ttl (a Go duration, 1h, 2s, or seconds)"
        ),
    ] = "1h",
    disable: Annotated[
        list[str] | None, typer.Option(help=f"controllers to switch off: {', '.join(CONTROLLERS)}")
    ] = None,
    users: Annotated[
        Path | None,
        typer.Option(
            help="YAML file of users by token: authenticate every request and authorise it "
            "by RBAC (the kubeconfig's token stays the admin's); without it, no checks"
        ),
    ] = None,
    tls: Annotated[
        bool,
        typer.Option(
            help="serve https with a CA made at start (in the kubeconfig); kubectl sends "
            "its token only over https"
        ),
    ] = False,
    bwrap: Annotated[
        str, typer.Option(help="bubblewrap, which sandboxes pod execs (refused without it)")
    ] = "bwrap",
    busybox: Annotated[
        str, typer.Option(help="a static busybox: the sandbox's only programs")
    ] = "busybox",
) -> None:
    """Serve the Kubernetes API on HOST:PORT until SIGINT or SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        cluster = ClusterSpec.load(nodes) if nodes else DEFAULT_CLUSTER
        known = Users.load(users) if users else None
    except ValueError as exc:
        typer.echo(f"kubesim: {exc}", err=True)
        raise typer.Exit(2) from None
    unknown = set(disable or []) - set(CONTROLLERS)
    if unknown:
        typer.echo(
            f"kubesim: unknown controllers {sorted(unknown)}; known: {', '.join(CONTROLLERS)}",
            err=True,
        )
        raise typer.Exit(2)
    try:
        ttl = parse_duration(event_ttl)
    except ValueError as exc:
        ttl, problem = 0.0, str(exc)
    else:
        problem = f"{event_ttl!r} is not positive"
    if ttl <= 0 or crash_interval <= 0:
        wrong = f"--event-ttl: {problem}" if ttl <= 0 else "--crash-interval must be positive"
        typer.echo(f"kubesim: {wrong}", err=True)
        raise typer.Exit(2)
    settings = ControllerSettings(
        enabled=frozenset(CONTROLLERS) - set(disable or []),
        pod_start_delay=pod_start_delay,
        crash_interval=crash_interval,
        event_ttl=ttl,
    )
    try:
        asyncio.run(
            _serve(
                KubeSim(
                    cluster,
                    kube_version=kube_version,
                    controllers=settings,
                    host=host,
                    port=port,
                    users=known,
                    tls=tls,
                    tls_hosts=[urlsplit(server_url).hostname or ""] if server_url else [],
                    sandbox=Sandbox(bwrap, busybox),
                ),
                kubeconfig,
                server_url,
            )
        )
    except KubeconfigError as exc:
        typer.echo(f"kubesim: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"kubesim: cannot listen on {host}:{port}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    except ValueError as exc:
        typer.echo(f"kubesim: {exc}", err=True)
        raise typer.Exit(2) from None


class KubeconfigError(Exception):
    """The kubeconfig cannot be written where it was asked for."""


def _check_kubeconfig(path: Path) -> None:
    if path.is_dir():
        raise KubeconfigError(f"cannot write the kubeconfig {path}: it is a directory")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise KubeconfigError(
                f"cannot write the kubeconfig {path}: {parent} is not a directory"
            )


async def _serve(sim: KubeSim, kubeconfig: Path | None, server_url: str = "") -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if kubeconfig is not None:  # say what is wrong before listening at all
        _check_kubeconfig(kubeconfig)
    async with sim:
        if kubeconfig is not None:
            try:
                sim.write_kubeconfig(kubeconfig, server_url)
            except OSError as exc:
                raise KubeconfigError(
                    f"cannot write the kubeconfig {kubeconfig}: {exc.strerror or exc}"
                ) from None
        names = ", ".join(n.name for n in sim.cluster.nodes)
        log.info(
            "kubesim serving Kubernetes %s at %s (nodes: %s)",
            sim.store.kube_version,
            sim.url,
            names or "none",
        )
        if kubeconfig is not None:
            log.info("kubeconfig written to %s", kubeconfig)
        sim.api.execs.sandbox.log_mode()
        with contextlib.suppress(asyncio.CancelledError):
            await stop.wait()
    log.info("kubesim stopped")
