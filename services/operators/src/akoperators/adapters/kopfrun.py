"""kopf inside the service runtime: an operator's handlers run as one supervised task.

:func:`run_kopf` starts kopf on a registry of the operator's own (not kopf's global one, so
tests can load several operators in one interpreter), logs in with the same kubeconfig the
rest of the provider uses (``AP_KUBECONFIG``, sealed or not, ``$KUBECONFIG``,
``~/.kube/config``, else the pod's service account), and ties kopf's life to the runtime's:

- ``/readyz`` says ``kopf: not watching yet`` until kopf has started its watches;
- SIGTERM reaches the runtime, which sets ``stopping``: kopf sees it as its stop flag and
  finishes the handler it is in (a finalizer is released only once its handler returned);
- kopf ending on its own (a login it cannot make, a crashed watcher) ends the process with
  exit code 1, like any supervised task, and the Deployment restarts it.

kopf keeps each object's progress in annotations under ``<name>.akash.network/`` and holds a
finalizer ``akash.network/<name>-operator`` on the objects it handles deletions of, so a
killed operator resumes where it stopped and never loses a deletion.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kopf

from akkube.client import configuration_of
from akoperators.adapters.kube import Kube
from akoperators.errors import KubeError
from akservice import Runtime
from akservice.secrets import is_sealed

log = logging.getLogger("akoperators")


def registry_with_login(kubeconfig: Path | None) -> kopf.OperatorRegistry:
    """A new registry whose login uses ``kubeconfig`` (or the usual places)."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if kubeconfig is not None and is_sealed(kubeconfig):
            return _sealed_login(kubeconfig)
        if kubeconfig is not None:
            os.environ["KUBECONFIG"] = str(kubeconfig)
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return kopf.login_with_service_account(**kwargs)
        return kopf.login_with_kubeconfig(**kwargs)

    return registry


def _sealed_login(path: Path) -> kopf.ConnectionInfo:
    """kopf's credentials from a sealed kubeconfig, opened in memory (the official client
    reads it; kopf is given what it found)."""
    configuration = configuration_of(path)
    keys = configuration.api_key or {}  # "BearerToken" since client 31, "authorization" before
    scheme, _, token = str(keys.get("BearerToken") or keys.get("authorization", "")).partition(" ")
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def operator_settings(name: str) -> kopf.OperatorSettings:
    """kopf's settings for the operator ``name``: its own finalizer and annotations, quiet
    logs (the runtime logs), watches that reconnect every few minutes."""
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = f"akash.network/{name}-operator"
    prefix = f"{name}.akash.network"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=prefix)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=prefix, key="last-handled-configuration"
    )
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.reconnect_backoff = 1.0
    settings.batching.error_delays = (1, 2, 5, 10, 20, 30)
    settings.execution.default_backoff = 5  # an unexpected error: try again soon, not in 60 s
    settings.networking.request_timeout = 30
    return settings


async def run_kopf(
    rt: Runtime[Any],
    registry: kopf.OperatorRegistry,
    settings: kopf.OperatorSettings,
    *,
    namespaces: tuple[str, ...] = (),
    memo: object | None = None,
) -> None:
    """Start kopf on ``registry`` (cluster-wide unless ``namespaces``) as a supervised task."""
    ready = asyncio.Event()
    rt.readiness(lambda: [] if ready.is_set() else ["kopf: not watching yet"])
    debugging = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    logging.getLogger("kopf").setLevel(logging.DEBUG if debugging else logging.WARNING)
    before = asyncio.all_tasks()
    tasks = await kopf.spawn_tasks(
        registry=registry,
        settings=settings,
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        stop_flag=rt.stopping,
        ready_flag=ready,
        memo=memo,
    )
    rt.reclaim_signals()  # kopf installed its own: the runtime drains the whole process
    rt.supervise(kopf.run_tasks(tasks, ignored=before), "kopf")


@contextlib.asynccontextmanager
async def _opened(path: Path | None) -> AsyncIterator[Kube]:
    kube = Kube.from_kubeconfig(path)
    try:
        yield kube
    finally:
        kube.close()


async def connect(rt: Runtime[Any], kubeconfig: Path | None) -> tuple[Kube, dict[str, Any]]:
    """A client for the operator's handlers (closed at shutdown) and the API server's
    ``/version``, waited for while the API cannot be reached."""
    kube = await rt.resource(_opened(kubeconfig))
    version = await rt.wait_for(
        "the Kubernetes API", lambda: kube.request("GET", "/version"), retry_on=(KubeError,)
    )
    return kube, version
