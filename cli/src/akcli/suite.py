"""``akash-provider run``: the whole provider suite on embedded defaults, as separate processes.

Redis (the embedded server unless ``REDIS_URL`` is set), the devnet chain, kubesim (a
simulated Kubernetes cluster) with the inventory, hostname and IP operators (the inventory
operator knowing kubesim's GPUs), the chain relay, the cluster service (``kube`` backend on
kubesim: its inventory the inventory operator's, its Ingresses the hostname operator's,
its leased IPs the IP operator's pool), the bid engine, manifest, balance and gateway
services, and simulated tenants deploying SDLs from Akash's template library. Everything
lives under ``.akash-provider/`` (logs in ``.akash-provider/logs``). HTTP services get
generated hostnames under ``ingress.localhost`` (static ingress hosts), so every tenant's
lease status has URIs. It prints where everything is and how to watch the streams, and
stops it all on Ctrl-C; if a process dies it says which, shows the end of its log, and
stops the rest.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
from pathlib import Path

import typer

from akbus.embedded import shared_server
from akcli.testing import Provider
from akdevnet.testing import DevnetProcess
from akservice.testing import ServiceProcess, child_environment

STATE = Path(".akash-provider")
GATEWAY_PORT = 8443  # the devnet registers the provider at https://localhost:8443
DASHBOARD_PORT = 8446
GRPC_PORT = 8444
ROOT = Path(__file__).resolve().parents[3]  # the repository (the workspace is installed editable)
TEMPLATES = ROOT / "libs" / "aktypes" / "tests" / "data" / "awesome-akash"
KUBESIM_NODES = ROOT / "simulators" / "kubesim" / "examples" / "nodes.yaml"
STORAGE_POOLS = "beta2=2Ti,beta3=2Ti"  # AP_INVENTORY_STORAGE
IP_POOL = "198.51.100.10-198.51.100.19"  # AP_IP_POOL
# the devnet's provider advertises what these offer (akdevnet.node.EMBEDDED_OFFER)
PRICES = {  # per block, in the order's denomination; the templates offer 1 000–100 000
    "AP_BID_PRICE_CPU_SCALE": "0.001",
    "AP_BID_PRICE_MEMORY_SCALE": "0.01",
    "AP_BID_PRICE_STORAGE_SCALE": "0.01,beta2=0.02,beta3=0.03",
    "AP_BID_PRICE_ENDPOINT_SCALE": "1",
    "AP_BID_PRICE_GPU_SCALE": "a100=100,*=80",
}


def _redis_url(state: Path) -> tuple[str, str]:
    url = os.environ.get("REDIS_URL", "")
    if url:
        return url, f"redis-cli -u {url}"
    url = shared_server(state / "redis")
    socket = url.removeprefix("unix://").split("?")[0]
    return url, f"redis-cli -s {socket}"


def _tail(process: ServiceProcess, lines: int = 15) -> str:
    return "\n".join(process.log().splitlines()[-lines:])


def run_suite(*, tenants: int, block_time: str, state: Path = STATE) -> int:
    os.umask(0o077)  # every file and folder of the run (logs, keys, state) is ours alone
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)  # what an earlier run left readable is out of others' reach too
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    redis_url, redis_cli = _redis_url(state)
    devnet = DevnetProcess(state / "devnet", block_time=block_time)
    processes: list[ServiceProcess] = [devnet]
    typer.echo("starting the devnet…")
    devnet.start()
    provider = Provider(
        devnet, redis_url, logs, nodes=KUBESIM_NODES.read_text(), storage=STORAGE_POOLS,
        scales=PRICES, bidengine_env={"AP_BID_TIMEOUT": "5m"}, gateway_port=GATEWAY_PORT,
        cluster_env={"AP_CLUSTER_PUBLIC_HOSTNAME": "localhost"},
        operators=("hostname", "ip"),  # and the inventory operator, always
        operator_env={"AP_IP_POOL": IP_POOL},
        dashboard_port=DASHBOARD_PORT, dashboard_token=secrets.token_urlsafe(16),
        grpc_port=GRPC_PORT,
        balance_env={"AP_LEASE_FUNDS_MONITOR_INTERVAL": "1m", "AP_WITHDRAWAL_PERIOD": "5m"},
    )  # fmt: skip
    typer.echo(
        "starting kubesim, the operators, the relay, the cluster, bid engine, balance, "
        "manifest and gateway…"
    )
    provider.start()
    processes += list(provider.processes.values())
    simulate = ["simulate", "--home", str(devnet.home), "--sdl-dir", str(TEMPLATES)]
    simulate += ["--provider-url", provider.gateway.url]
    tenants_process = ServiceProcess(
        [sys.executable, "-m", "akdevnet", *simulate, "--tenants", str(tenants), "--hold", "60"],
        log_path=logs / "tenants.log",
        ready=lambda: True,
        env=child_environment(AKDEVNET_KEY_PASSPHRASE="devnet"),  # noqa: S106 - the devnet's
        name="tenants",
    )
    tenants_process.start()
    processes.append(tenants_process)
    typer.echo(_summary(provider, redis_cli, logs))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    code = 0
    while not stop.wait(1.0):
        dead = [p for p in processes if not p.running()]
        if dead:
            for process in dead:
                typer.echo(f"\n{process.name} stopped unexpectedly; the end of its log:", err=True)
                typer.echo(_tail(process), err=True)
            code = 1
            break
    typer.echo("\nstopping…")
    for process in reversed(processes):
        try:
            process.stop()
        except Exception as exc:  # stop the others whatever happens
            typer.echo(f"could not stop {process.name}: {exc}", err=True)
    return code


def _summary(provider: Provider, redis_cli: str, logs: Path) -> str:
    devnet = provider.devnet
    home = devnet.home
    kube = provider.kubesim
    return f"""
The provider suite is running (Ctrl-C stops everything).

  chain (devnet)   RPC {devnet.rpc_url}   LCD {devnet.lcd_url}   home {home}
  kubesim          {kube.url}   kubeconfig {kube.kubeconfig}
  operators        {provider.operator("inventory").health_url}/v1/inventory   (inventory)
                   {provider.operator("hostname").health_url}/readyz   (hostnames → Ingresses)
                   {provider.operator("ip").health_url}/v1/pool   (leased IPs → LoadBalancers)
  chain relay      {provider.processes["relay"].health_url}/readyz
  cluster          {provider.cluster().health_url}/readyz   (/metrics: provider_inventory_*)
  bid engine       {provider.bidengine.health_url}/readyz   (/metrics: provider_bid*)
  manifest         {provider.manifest.health_url}/readyz
  balance          {provider.balance.health_url}/readyz   (/metrics: provider_balance_*)
  gateway          {provider.gateway.url}/status   (the tenants' API, mTLS)
  gRPC             {provider.gateway.grpc_target}   (akash.provider.v1.ProviderRPC, TLS, reflection)
  dashboard        {provider.gateway.dashboard_url}/?token={provider.gateway.dashboard_token}
  tenants          simulated, deploying Akash's templates (libs/aktypes/tests/data/awesome-akash)
  logs             {logs}/*.log

At a glance (from the streams):
  uv run akash-provider status             (every service's latest status)
  uv run akash-provider orders             (decisions and decline reasons; `leases` likewise)
  uv run akash-provider events --follow    (a readable tail of the streams)
  uv run akash-provider provider check     (the chain's capabilities against the inventory)

Watch the bids:
  {redis_cli} XRANGE akash.provider.bidengine.events - +
  {redis_cli} XREVRANGE akash.provider.bidengine.events + - COUNT 5
  {redis_cli} XRANGE akash.provider.cluster.status - +
  uv run python -m akdevnet events --home {home} | tail
  uv run python -m akdevnet tenant bids DSEQ --home {home}
  uv run akash-provider bid screen deploy.yaml          (why would it bid, or not?)

Watch a simulated tenant's deployment reach Running:
  grep "manifest of dseq" {logs}/tenants.log               (dseqs whose manifest was accepted)
  {redis_cli} XRANGE akash.provider.cluster.events - +    (deployment.applied, deployment.health)
  kubectl --kubeconfig {kube.kubeconfig} get pods -A -l akash.network=true

Your own deployment, as a tenant through the gateway:
  uv run python -m akdevnet tenant cert --home {home}
  uv run python -m akdevnet tenant deploy {TEMPLATES}/tetris.yaml --home {home}     (prints DSEQ)
  uv run python -m akdevnet tenant accept DSEQ --home {home}
  uv run python -m akdevnet tenant send-manifest DSEQ --sdl {TEMPLATES}/tetris.yaml --home {home}
  uv run python -m akdevnet tenant lease-status DSEQ --home {home}
      (the HTTP service tetris accepts no hostname: its URI is generated,
       "uris": ["<26 characters>.{provider.ingress_domain}"], routed by an Ingress on kubesim)
  uv run python -m akdevnet tenant token --home {home}     (a bearer token, not the certificate)
"""
