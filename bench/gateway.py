"""The gateway under load: ``GET /status`` and a tenant's ``GET /lease/…/status`` against
the running suite, beside a bare uvicorn endpoint measured in the same run.

The suite is the one the cross-service tests run (``akcli.testing.Provider``: devnet, Redis,
relay, kubesim, cluster, bid engine, manifest, gateway, each a process). A tenant deploys
one lease through it; the lease status requests carry that tenant's bearer token (load
tools cannot present client certificates), so each one is authenticated and scope-checked,
then answered from the gateway's memory: the status the cluster service keeps from its
Kubernetes watches and confirms every 2 s (within the gateway's 10 s bound).

The baseline is the least any HTTPS endpoint on this machine costs: uvicorn (the same h11
protocol, the same TLS 1.3 context made from the provider's certificate) serving the
``/status`` body the gateway just returned, as pre-encoded bytes, from a raw ASGI callable
in a process of its own — no framework, no routing, no bus.

Load: ``wrk`` (one thread, ``--connections`` keep-alive connections, ``--seconds``) for the
most requests per second; ``hey`` at a fixed ``--rate`` (10 workers) for latency under a
steady load, p50/p99 computed from every request's time. Both are C/Go programs, so the
load generator is not the bottleneck (Debian: ``apt-get install wrk hey``).

The last line is::

    gateway status_rps=<x> bare_rps=<y> ratio=<x/y> p99_ms_at_500rps=<z>
        lease_status_rps=<l> lease_status_p99_ms_at_500rps=<m>

(on one line; ``p99_ms_at_500rps``: /status at ``--rate``, 500 by default;
``lease_status_…``: the tenant's lease status, likewise.)

    uv run python bench/gateway.py [--seconds 10] [--connections 32] [--rate 500]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import io
import json
import math
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import uvicorn

from akbus.embedded import EmbeddedRedis, free_port
from akcli.testing import Provider, certified, flow, sdl
from akdevnet.testing import DevnetProcess
from akgateway.adapters.tls import server_context

HEY_WORKERS = 10


# -- the bare endpoint ----------------------------------------------------------------------


def serve_bare(port: int, cert_file: Path, body_file: Path) -> None:
    """uvicorn with a raw ASGI callable answering ``body_file``'s bytes (a child process)."""
    body = body_file.read_bytes()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def app(_scope: dict[str, Any], _receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    context = server_context(cert_file)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http="h11",
        ws="none",
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        ssl_context_factory=lambda _config, _default: context,
    )
    uvicorn.Server(config).run()


def wait_listening(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"nothing listens on {port} after {timeout_s} s")


def fetch(url: str) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the provider's certificate names no loopback address
    with urllib.request.urlopen(url, context=context, timeout=10) as answer:  # noqa: S310
        return bytes(answer.read())


# -- load -----------------------------------------------------------------------------------


def wrk(url: str, seconds: float, connections: int, headers: list[str]) -> float:
    """Requests per second ``wrk`` gets from ``url`` (every answer must be a 2xx)."""
    args = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s"]
    for header in headers:
        args += ["-H", header]
    out = subprocess.run(  # noqa: S603 - the load tool, with this script's arguments
        [*args, url], capture_output=True, text=True, check=True
    ).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        sys.exit(f"wrk saw failures on {url}:\n{out}")
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if found is None:
        sys.exit(f"no rate in wrk's output:\n{out}")
    return float(found.group(1))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def hey(url: str, seconds: float, rate: int, headers: list[str]) -> tuple[float, float, float]:
    """(achieved rps, p50 ms, p99 ms) of ``url`` at ``rate`` requests per second."""
    per_worker = max(1, round(rate / HEY_WORKERS))
    args = ["hey", "-z", f"{max(1, round(seconds))}s", "-c", str(HEY_WORKERS)]
    args += ["-q", str(per_worker), "-o", "csv", "-t", "10"]
    for header in headers:
        args += ["-H", header]
    out = subprocess.run(  # noqa: S603 - the load tool, with this script's arguments
        [*args, url], capture_output=True, text=True, check=True
    ).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    if not rows:
        sys.exit(f"hey sent nothing to {url}")
    bad = [r for r in rows if not r["status-code"].startswith("2")]
    if bad:
        sys.exit(f"hey saw {len(bad)} failed requests on {url}: {bad[0]}")
    latencies = [float(r["response-time"]) * 1000 for r in rows]
    span = max(float(r["offset"]) for r in rows) or 1.0
    return len(rows) / span, percentile(latencies, 0.5), percentile(latencies, 0.99)


# -- the suite ------------------------------------------------------------------------------


def lease_with_token(provider: Provider) -> tuple[str, str]:
    """A running lease of tenant-1's: its status path and a bearer token allowed to read it."""

    async def made() -> tuple[str, str]:
        async with provider.devnet.clients() as chain:
            tenant = chain.tenant("tenant-1")
            certificate = await certified(tenant, provider)
            result = await flow(provider, tenant, certificate, sdl(cpu=0.5, count=2), "bench")
            lease = result["leases"][0]
            token = tenant.token(
                {"access": "scoped", "scope": ["status"]}, lifetime=dt.timedelta(hours=1)
            )
            return f"/lease/{lease.dseq}/{lease.gseq}/{lease.oseq}/status", token

    return asyncio.run(made())


def run(args: argparse.Namespace, work: Path) -> str:
    for tool in ("wrk", "hey"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (Debian: apt-get install wrk hey)")
    with (
        DevnetProcess(work / "devnet") as devnet,
        EmbeddedRedis(work / "redis", aof=False) as redis,
    ):
        (work / "suite").mkdir()
        provider = Provider(devnet, redis.url, work / "suite")
        provider.gateway_env["AP_LOG_LEVEL"] = "warning"
        try:
            provider.start()
            url = provider.gateway.url
            lease_path, token = lease_with_token(provider)
            lease_url, bearer = f"{url}{lease_path}", [f"Authorization: Bearer {token}"]
            body = fetch(f"{url}/status")
            json.loads(body)  # a real answer, not an error page
            body_file = work / "status.json"
            body_file.write_bytes(body)
            cert_file = next((work / "suite" / "gateway-tls").glob("akash1*.pem"))
            port = free_port()
            bare = subprocess.Popen(  # noqa: S603 - this script, as the bare server
                [
                    sys.executable,
                    __file__,
                    "--bare-serve",
                    str(port),
                    str(cert_file),
                    str(body_file),
                ]
            )
            try:
                wait_listening(port)
                bare_url = f"https://127.0.0.1:{port}/status"
                targets = ((bare_url, []), (f"{url}/status", []), (lease_url, bearer))
                for target, headers in targets:
                    wrk(target, 2, args.connections, headers)  # warm up
                bare_rps = wrk(bare_url, args.seconds, args.connections, [])
                status_rps = wrk(f"{url}/status", args.seconds, args.connections, [])
                lease_rps = wrk(lease_url, args.seconds, args.connections, bearer)
                print(f"most requests/s ({args.connections} connections, {args.seconds:g} s):")
                print(f"  bare uvicorn endpoint   {bare_rps:9.0f}")
                print(f"  GET /status             {status_rps:9.0f}")
                print(f"  GET /lease/…/status     {lease_rps:9.0f}  (bearer token, from memory)")
                print(
                    f"at {args.rate} requests/s ({args.seconds:g} s):       rps   p50 ms   p99 ms"
                )
                results = {}
                for name, target, headers in (
                    ("bare uvicorn endpoint", bare_url, []),
                    ("GET /status", f"{url}/status", []),
                    ("GET /lease/…/status", lease_url, bearer),
                ):
                    results[name] = hey(target, args.seconds, args.rate, headers)
                    rps, p50, p99 = results[name]
                    print(f"  {name:<22} {rps:12.0f} {p50:8.2f} {p99:8.2f}")
            finally:
                bare.terminate()
                bare.wait(10)
        finally:
            provider.stop()
    p99 = results["GET /status"][2]
    lease_p99 = results["GET /lease/…/status"][2]
    return (
        f"gateway status_rps={status_rps:.0f} bare_rps={bare_rps:.0f} "
        f"ratio={status_rps / bare_rps:.2f} p99_ms_at_{args.rate}rps={p99:.2f} "
        f"lease_status_rps={lease_rps:.0f} lease_status_p99_ms_at_{args.rate}rps={lease_p99:.2f}"
    )


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--bare-serve":
        serve_bare(int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each load run")
    parser.add_argument("--connections", type=int, default=32, help="wrk's connections")
    parser.add_argument("--rate", type=int, default=500, help="requests/s of the latency runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        line = run(args, Path(tmp))
    print(line)


if __name__ == "__main__":
    main()
