"""The client made from each place credentials come from, against kubesim over HTTP:
a kubeconfig file, ``$KUBECONFIG``, a sealed kubeconfig, nothing at all; the same
credentials for kopf's login and for a websocket's TLS."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes.client import ApiClient
from kubernetes.config import ConfigException
from urllib3.util.retry import Retry

from akkube.calls import get_json, target
from akkube.client import api_client, configuration_of, ssl_context
from akservice.secrets import KUBECONFIG, Vault, VaultError
from kubesim.testing import ThreadedKubeSim


@contextlib.contextmanager
def opened(client: ApiClient) -> Iterator[ApiClient]:
    try:
        yield client
    finally:
        client.close()  # type: ignore[no-untyped-call]


def nodes(client: ApiClient) -> set[str]:
    listed = get_json(client, "/api/v1/nodes")
    return {n["metadata"]["name"] for n in listed["items"]}


@pytest.fixture
def sealed(kubesim_kubeconfig: Path, tmp_path: Path) -> Path:
    """kubesim's kubeconfig sealed as ``cluster onboard`` leaves it, beside its key file."""
    vault = Vault(tmp_path / "home" / ".akash-provider" / "secret.key")
    return vault.seal_file(KUBECONFIG, kubesim_kubeconfig)


def test_a_kubeconfig_file_names_the_server_and_the_credentials(
    kubesim_kubeconfig: Path, kubesim_thread: ThreadedKubeSim
) -> None:
    with opened(api_client(kubesim_kubeconfig)) as client:
        assert client.configuration.host == kubesim_thread.url
        assert nodes(client)


def test_without_a_path_kubeconfig_is_read_at_each_call(
    kubesim_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubesim_kubeconfig))
    with opened(api_client()) as client:
        assert nodes(client)


def test_a_sealed_kubeconfig_opens_in_memory(sealed: Path) -> None:
    assert b"kubesim" not in sealed.read_bytes()  # the token is not there in the clear
    with opened(api_client(sealed)) as client:
        assert nodes(client)


def test_a_sealed_kubeconfig_without_its_key_is_refused_plainly(sealed: Path) -> None:
    sealed.with_name("secret.key").unlink()
    with pytest.raises(VaultError, match="secret.key"):
        api_client(sealed)


def test_a_missing_file_named_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(ConfigException):
        api_client(tmp_path / "missing")


def test_nothing_to_read_and_not_in_a_cluster_says_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigException, match="no kubeconfig .* and not in a cluster"):
        api_client()


def test_retries_reach_every_connection(kubesim_kubeconfig: Path) -> None:
    retries = Retry(total=1, connect=1, read=0, status=0, other=0, redirect=False)
    with opened(api_client(kubesim_kubeconfig, retries=retries)) as client:
        assert client.configuration.retries is retries
        assert client.rest_client.pool_manager.connection_pool_kw["retries"] is retries
        assert nodes(client)  # the remade REST client works


def test_kopf_and_other_clients_read_the_same_credentials(
    sealed: Path, kubesim_thread: ThreadedKubeSim
) -> None:
    configuration = configuration_of(sealed)
    assert configuration.host == kubesim_thread.url
    assert configuration.api_key["BearerToken"] == "Bearer kubesim"


def test_plain_http_needs_no_tls(kubesim_kubeconfig: Path) -> None:
    with opened(api_client(kubesim_kubeconfig)) as client:
        assert ssl_context(client.configuration) is False


async def test_a_websocket_client_gets_the_servers_tls(tmp_path: Path) -> None:
    """An https kubesim: the context trusts its CA (from the kubeconfig), and the URL and
    headers of a request carry the token."""
    with (
        ThreadedKubeSim(tls=True) as sim,
        opened(api_client(sim.write_kubeconfig(tmp_path / "kubeconfig"))) as client,
    ):
        context = ssl_context(client.configuration)
        assert context is not False
        url, headers = target(client, "/version")
        async with (
            aiohttp.ClientSession() as http,
            asyncio.timeout(10),
            http.get(url, headers=headers, ssl=context) as answer,
        ):
            assert answer.status == 200
            assert "gitVersion" in await answer.json()
