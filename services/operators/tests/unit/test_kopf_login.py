"""kopf's login from a sealed kubeconfig: the server and the user's token, opened in memory."""

from __future__ import annotations

from pathlib import Path

from akoperators.adapters.kopfrun import _sealed_login
from akservice.secrets import KUBECONFIG, Vault
from kubesim import kubeconfig


def test_a_sealed_kubeconfig_gives_kopf_its_server_and_token(tmp_path: Path) -> None:
    plain = kubeconfig.write(tmp_path / "kubeconfig", "http://127.0.0.1:6443", token="t0ken")
    sealed = Vault(tmp_path / "home" / "secret.key").seal_file(KUBECONFIG, plain)
    login = _sealed_login(sealed)
    assert (login.server, login.scheme, login.token) == ("http://127.0.0.1:6443", "Bearer", "t0ken")
