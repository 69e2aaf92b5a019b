"""pytest fixtures for kubesim, installed as a pytest plugin with the package.

- `kubesim`: a simulator in the test's event loop (two nodes, fast pods); async tests;
- `kubesim_thread`: a simulator in a thread of its own, for the synchronous client;
- `kubesim_kubeconfig`: a kubeconfig file for `kubesim_thread`;
- `kubesim_process`: the `python -m kubesim serve` command on a free port;
- `exec_sandbox`: fails the test, saying what to install, when this machine cannot make
  kubesim's exec sandbox (every exec would be refused).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kubesim.sandbox import Sandbox
from kubesim.sim import KubeSim
from kubesim.testing import KubeSimProcess, ThreadedKubeSim, running


@pytest.fixture
async def kubesim() -> AsyncIterator[KubeSim]:
    async with running() as sim:
        yield sim


@pytest.fixture
def kubesim_thread() -> Iterator[ThreadedKubeSim]:
    with ThreadedKubeSim() as sim:
        yield sim


@pytest.fixture
def kubesim_kubeconfig(kubesim_thread: ThreadedKubeSim, tmp_path: Path) -> Path:
    return kubesim_thread.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kubesim_process(tmp_path: Path) -> Iterator[KubeSimProcess]:
    with KubeSimProcess(tmp_path) as process:
        yield process


@pytest.fixture(scope="session")
def exec_sandbox() -> None:
    sandbox = Sandbox()
    try:
        sandbox.prepare()
    finally:
        sandbox.close()
    if sandbox.reason is not None:
        pytest.fail(
            f"kubesim cannot sandbox exec on this machine: {sandbox.reason} "
            "(on Debian: apt-get install bubblewrap busybox-static)",
            pytrace=False,
        )
