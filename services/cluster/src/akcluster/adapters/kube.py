"""The Kubernetes API client of the ``kube`` deployment backend
(:mod:`akcluster.adapters.kube_deploy`): the official client, from a kubeconfig file, a
sealed one (``akash-provider cluster onboard``), or the in-cluster service account.

The cluster's inventory is not read here: it is the inventory operator's
(``python -m akoperators.inventory``), which the service follows on the bus.
"""

from __future__ import annotations

import os
from pathlib import Path

import kubernetes
from kubernetes.client import ApiClient, Configuration

from akservice.secrets import is_sealed, kubeconfig_of


def _api_client(path: Path | None) -> ApiClient:
    """A client from ``path`` (a ``.sealed`` one opened with the key file beside it), else
    ``$KUBECONFIG`` (read now: the library reads it once, on import) or ``~/.kube/config``,
    else the in-cluster service account."""
    config = kubernetes.config
    if path is not None and is_sealed(path):  # sealed by `cluster onboard`: opened in memory
        return config.new_client_from_config_dict(kubeconfig_of(path))  # type: ignore[no-untyped-call, no-any-return]
    files = str(path) if path else os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=os.path.expanduser(files)
        )
    except config.ConfigException as no_file:
        if path is not None:
            raise
        configuration = Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as exc:
            raise config.ConfigException(
                f"no kubeconfig ({no_file}) and not in a cluster ({exc})"
            ) from exc
        client = ApiClient(configuration)
    return client
