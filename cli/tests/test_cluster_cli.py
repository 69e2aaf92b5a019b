"""``akash-provider cluster onboard | check | rotate-key`` against a real kubesim process:
exit codes, what is printed, what is sealed, and that a refused onboarding changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from typer.testing import CliRunner

from akcli.main import app
from akservice.secrets import Vault, VaultError, key_id, read_key
from kubesim.authz import User, Users
from kubesim.testing import KubeSimProcess

runner = CliRunner()
AKASH_CRDS = {
    "manifests.akash.network",
    "providerhosts.akash.network",
    "providerleasedips.akash.network",
}


@pytest.fixture
def kubesim(tmp_path: Path) -> Iterator[KubeSimProcess]:
    folder = tmp_path / "kubesim"
    folder.mkdir()
    with KubeSimProcess(folder, None, users=Users({"reader": User("reader")})) as process:
        yield process


def crd_names(kubeconfig: Path) -> set[str]:
    api = config.new_client_from_config(str(kubeconfig))
    try:
        listed = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        return {c.metadata.name for c in listed}
    finally:
        api.close()


def test_onboard_then_check_then_rotate(kubesim: KubeSimProcess, tmp_path: Path) -> None:
    key_file = tmp_path / "home" / "secret.key"
    provider_key = tmp_path / "provider-key.json"
    provider_key.write_text(json.dumps({"format": "akash-provider-key/1"}))
    args = ["--kubeconfig", str(kubesim.kubeconfig), "--key-file", str(key_file)]
    done = runner.invoke(app, ["cluster", "onboard", *args, "--provider-key", str(provider_key)])
    assert done.exit_code == 0, done.output
    assert "Nodes (2):" in done.output and "Storage classes: beta2" in done.output
    assert "CRDs: manifests.akash.network created" in done.output
    assert done.output.rstrip().endswith("Ready: the cluster has what the provider needs.")
    assert crd_names(kubesim.kubeconfig) >= AKASH_CRDS
    vault = Vault(key_file)
    assert vault.names() == ["kubeconfig", "provider-key"]
    assert vault.open("kubeconfig") == kubesim.kubeconfig.read_bytes()

    again = runner.invoke(app, ["cluster", "onboard", *args])
    assert again.exit_code == 0, again.output
    assert "CRDs: manifests.akash.network unchanged" in again.output

    checked = runner.invoke(app, ["cluster", "check", "--kubeconfig", str(kubesim.kubeconfig)])
    assert checked.exit_code == 0, checked.output
    assert "manifests.akash.network installed" in checked.output

    old = read_key(key_file)
    rotated = runner.invoke(app, ["cluster", "rotate-key", "--key-file", str(key_file)])
    assert rotated.exit_code == 0, rotated.output
    new = read_key(key_file)
    assert rotated.output.strip() == (
        f"New key {key_id(new)} in {key_file}; re-sealed: kubeconfig, provider-key."
    )
    assert vault.open("kubeconfig") == kubesim.kubeconfig.read_bytes()
    key_file.write_bytes(old)
    with pytest.raises(VaultError, match="wrong key file"):
        vault.open("kubeconfig")
    refused = runner.invoke(app, ["cluster", "rotate-key", "--key-file", str(key_file)])
    assert refused.exit_code == 1  # every file sealed with a key that is not there
    assert "which no key file holds" in refused.output


def test_a_user_without_the_permissions_gets_exit_code_1_and_no_change(
    kubesim: KubeSimProcess, tmp_path: Path
) -> None:
    key_file = tmp_path / "home" / "secret.key"
    reader = kubesim.kubeconfig_for("reader")
    done = runner.invoke(
        app, ["cluster", "onboard", "--kubeconfig", str(reader), "--key-file", str(key_file)]
    )
    assert done.exit_code == 1, done.output
    assert "Missing permissions" in done.output
    assert "✗ create apiextensions.k8s.io/customresourcedefinitions" in done.output
    assert "✗ list core/nodes" in done.output
    assert "nothing was changed" in done.output
    assert not set(crd_names(kubesim.kubeconfig)) & AKASH_CRDS
    assert not (key_file.parent / "kubeconfig.sealed").exists()
    checked = runner.invoke(app, ["cluster", "check", "--kubeconfig", str(reader)])
    assert checked.exit_code == 1 and "Missing permissions" in checked.output


def test_no_store_and_a_check_before_onboarding(kubesim: KubeSimProcess, tmp_path: Path) -> None:
    admin = str(kubesim.kubeconfig)
    before = runner.invoke(app, ["cluster", "check", "--kubeconfig", admin])
    assert before.exit_code == 1
    assert "CRD manifests.akash.network is not installed" in before.output
    key_file = tmp_path / "home" / "secret.key"
    done = runner.invoke(
        app,
        ["cluster", "onboard", "--kubeconfig", admin, "--key-file", str(key_file), "--no-store"],
    )
    assert done.exit_code == 0, done.output
    assert not key_file.parent.exists()  # nothing sealed, no key made
    missing = runner.invoke(app, ["cluster", "check", "--kubeconfig", str(tmp_path / "nope")])
    assert missing.exit_code == 2  # a usage error: the file does not exist
