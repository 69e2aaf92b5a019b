"""The provider suite as real processes, for cross-service tests.

``Provider`` starts, on a devnet and a Redis of the test's own, kubesim running the nodes
below, the chain relay, a cluster service (``kube`` backend on kubesim; or the ``null``
backend on the same nodes), the bid engine, the manifest service and the gateway (its
certificate generated and published on chain first), each as a subprocess;
tests read the chain (LCD), kubesim and the streams to see what they did.
``akash-provider run`` starts the same.
:func:`frozen` pauses one of them (SIGSTOP … SIGCONT), to hold it still at a chosen moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from akbidengine.testing import BidEngineProcess
from akbus import Bus
from akchainsvc.testing import RelayProcess
from akcluster.testing import ClusterProcess
from akdevnet.testing import TEST_PASSPHRASE, DevnetProcess
from akgateway.testing import GatewayProcess
from akmanifest.testing import ManifestProcess
from akservice.testing import ServiceProcess
from aktypes.events import Envelope, envelope_from_fields
from aktypes.sdl import SDL, parse_sdl
from kubesim.testing import KubeSimProcess

NODES = """
nodes:
  - {name: big-a, cpu: "64", memory: 256Gi, ephemeral-storage: 4Ti, storage-classes: [beta2]}
  - {name: big-b, cpu: "64", memory: 256Gi, ephemeral-storage: 4Ti, storage-classes: [beta2]}
  - name: gpu-a
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 2Ti
    storage-classes: [beta2]
    gpus: {vendor: nvidia, model: a100, count: 8, memory: 80Gi, interface: sxm}
"""

SCALES = {
    "AP_BID_PRICE_CPU_SCALE": "0.001",
    "AP_BID_PRICE_MEMORY_SCALE": "0.01",
    "AP_BID_PRICE_STORAGE_SCALE": "0.01,beta2=0.02",
    "AP_BID_PRICE_ENDPOINT_SCALE": "1",
    "AP_BID_PRICE_GPU_SCALE": "a100=50,*=40",
}


@dataclass
class Provider:
    """The provider's processes and what tests need to drive and watch them."""

    devnet: DevnetProcess
    redis_url: str
    tmp: Path
    bidengine_env: dict[str, str] = field(default_factory=dict)
    cluster_env: dict[str, str] = field(default_factory=dict)
    manifest_env: dict[str, str] = field(default_factory=dict)
    gateway_env: dict[str, str] = field(default_factory=dict)
    gateway_port: int | None = None  # default: a free port
    nodes: str = NODES
    storage: str = "beta2=8Ti"  # persistent storage pools, AP_CLUSTER_STORAGE's syntax
    backend: str = "kube"  # the cluster's inventory: kubesim running `nodes`, or `null`
    scales: dict[str, str] = field(default_factory=lambda: dict(SCALES))
    processes: dict[str, Any] = field(default_factory=dict)

    def start(self, *, clusters: int = 1) -> Provider:
        inventory = self.tmp / "nodes.yaml"
        inventory.write_text(self.nodes)
        cluster_env = dict(self.cluster_env)
        if self.backend == "kube":
            kube = KubeSimProcess(self.tmp / "kubesim", None, "--nodes", str(inventory))
            self.processes["kubesim"] = kube
            cluster_env = {
                "AP_CLUSTER_BACKEND": "kube",
                "AP_KUBECONFIG": str(kube.kubeconfig.resolve()),
                "AP_CLUSTER_STORAGE": self.storage,
                **cluster_env,
            }
        else:
            pools = dict(p.split("=") for p in self.storage.split(",") if p)
            inventory.write_text(self.nodes + "\n" + yaml.safe_dump({"storage": pools}))
        self.processes["relay"] = RelayProcess(
            redis_url=self.redis_url,
            node=self.devnet.rpc_url,
            api=self.devnet.lcd_url,
            key_file=self.devnet.key_path("provider"),
            passphrase=TEST_PASSPHRASE,
            log_path=self.tmp / "relay.log",
        )
        for i in range(clusters):
            self.processes[f"cluster-{i}"] = ClusterProcess(
                redis_url=self.redis_url,
                log_path=self.tmp / f"cluster-{i}.log",
                inventory_file=inventory,
                instance=str(i),
                extra_env=cluster_env,
            )
        self.processes["bidengine"] = BidEngineProcess(
            redis_url=self.redis_url,
            api=self.devnet.lcd_url,
            log_path=self.tmp / "bidengine.log",
            extra_env={**self.scales, **self.bidengine_env},
        )
        self.processes["manifest"] = ManifestProcess(
            redis_url=self.redis_url,
            api=self.devnet.lcd_url,
            log_path=self.tmp / "manifest.log",
            extra_env=self.manifest_env,
        )
        for process in self.processes.values():
            process.start()
        gateway = GatewayProcess(
            redis_url=self.redis_url,
            api=self.devnet.lcd_url,
            tls_dir=self.tmp / "gateway-tls",
            log_path=self.tmp / "gateway.log",
            port=self.gateway_port,
            extra_env={
                "AP_GATEWAY_REQUEST_TIMEOUT": "10s",
                "AP_GATEWAY_SUBMIT_TIMEOUT": "60s",
                **self.gateway_env,
            },
        )
        for step in ("generate", "publish"):  # the provider's certificate, on chain
            done = gateway.cert(step)
            if done.returncode != 0:
                raise RuntimeError(f"gateway cert {step}: {done.stdout}{done.stderr}")
        self.processes["gateway"] = gateway
        gateway.start()
        return self

    @property
    def gateway(self) -> GatewayProcess:
        process: GatewayProcess = self.processes["gateway"]
        return process

    @property
    def manifest(self) -> ManifestProcess:
        process: ManifestProcess = self.processes["manifest"]
        return process

    @property
    def bidengine(self) -> BidEngineProcess:
        process: BidEngineProcess = self.processes["bidengine"]
        return process

    @property
    def relay(self) -> RelayProcess:
        process: RelayProcess = self.processes["relay"]
        return process

    @property
    def kubesim(self) -> KubeSimProcess:
        process: KubeSimProcess = self.processes["kubesim"]
        return process

    def cluster(self, index: int = 0) -> ClusterProcess:
        process: ClusterProcess = self.processes[f"cluster-{index}"]
        return process

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            with contextlib.suppress(Exception):
                process.stop()


@contextlib.contextmanager
def frozen(process: ServiceProcess) -> Iterator[None]:
    """``process`` stopped (SIGSTOP) for the block: it holds what it has read and does
    nothing. It runs on (SIGCONT) after the block, unless it was killed meanwhile."""
    pid = process.pid
    if pid is None:
        raise RuntimeError(f"{process.name} is not running")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        if process.running() and process.pid == pid:
            os.kill(pid, signal.SIGCONT)


async def stream(bus: Bus, name: str) -> list[Envelope[Any]]:
    return [envelope_from_fields(e.fields) for e in await bus.backend.entries(name)]


def sdl_text(
    *,
    cpu: float = 1,
    memory: str = "512Mi",
    storage: str = "1Gi",
    count: int = 1,
    gpu: str = "",
    attributes: str = "",
    signed_by: str = "",
) -> str:
    """A one-service SDL (uact, max 100 000 per block); the arguments ask for what a test
    needs: a GPU ``model``, placement ``attributes: {…}``, ``signedBy: {…}``."""
    gpu_block = (
        f"""
        gpu:
          units: 1
          attributes:
            vendor:
              nvidia:
                - model: {gpu}"""
        if gpu
        else ""
    )
    return f"""
version: "2.0"
services:
  web:
    image: nginx:1.27
    expose:
      - port: 80
        as: 80
        to:
          - global: true
profiles:
  compute:
    web:
      resources:
        cpu:
          units: {cpu}
        memory:
          size: {memory}
        storage:
          size: {storage}{gpu_block}
  placement:
    dc:
      {attributes or "attributes: {host: akash}"}
      {signed_by}
      pricing:
        web:
          denom: uact
          amount: 100000
deployment:
  web:
    dc:
      profile: web
      count: {count}
"""


def sdl(**asked: Any) -> SDL:
    """:func:`sdl_text`, parsed."""
    return parse_sdl(sdl_text(**asked))
