"""The official client made for the provider's kubeconfig, in one place for every process.

Where the credentials come from, in order: the path given (``AP_KUBECONFIG``; a
``.sealed`` one, as ``akash-provider cluster onboard`` leaves it, is opened in memory with
the key file beside it, :mod:`akservice.secrets`), else ``$KUBECONFIG`` or
``~/.kube/config``, else the pod's service account (in-cluster). The same credentials
serve clients other than the official one: :func:`configuration_of` (kopf's login) and
:func:`ssl_context` (a websocket client's TLS).
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTClientObject
from kubernetes.config import ConfigException
from urllib3.util.retry import Retry

from akservice.secrets import is_sealed, kubeconfig_of

# the official client's types the services handle, so that no service imports it
__all__ = ["ApiClient", "ApiException", "ConfigException", "api_client"]


def api_client(path: Path | None = None, *, retries: Retry | None = None) -> ApiClient:
    """A client from ``path`` (a ``.sealed`` one opened with the key file beside it), else
    ``$KUBECONFIG`` (read now: the library reads it once, on import) or ``~/.kube/config``,
    else the in-cluster service account. ``retries``: urllib3's retries for every request
    (the library's own default when None)."""
    client = _made(path)
    if retries is not None:
        client.configuration.retries = retries  # read when the REST client is made:
        client.rest_client.close()  # make it again (it has not connected yet)
        client.rest_client = RESTClientObject(client.configuration)
    return client


def _made(path: Path | None) -> ApiClient:
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


def configuration_of(path: Path) -> Configuration:
    """What the kubeconfig at ``path`` (sealed or not) says: server, CA, token or client
    certificate, as the official client reads it — for a client that is not the official
    one (kopf is handed what it found)."""
    configuration = Configuration()
    kubernetes.config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
        kubeconfig_of(path), client_configuration=configuration
    )
    return configuration


def ssl_context(configuration: Any) -> ssl.SSLContext | bool:
    """TLS for the API server as the client's configuration has it (its CA, client
    certificate, verification); False for plain HTTP."""
    if not str(configuration.host).startswith("https"):
        return False
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    return context
