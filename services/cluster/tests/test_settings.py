"""The ingress settings of ``python -m akcluster``: Go's names, Go's check of the domain."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from akcluster.settings import ClusterSettings


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AP_", "REDIS_"))}
    return subprocess.run(
        [sys.executable, "-m", "akcluster", *args],
        capture_output=True, text=True, timeout=30, env={**clean, **env}, check=False,
    )  # fmt: skip


def test_help_lists_the_ingress_settings() -> None:
    shown = run("--help")
    assert shown.returncode == 0
    for name, default in [
        ("AP_DEPLOYMENT_INGRESS_STATIC_HOSTS", "False"),
        ("AP_DEPLOYMENT_INGRESS_DOMAIN", '""'),
    ]:
        line = next(x for x in shown.stdout.splitlines() if x.split()[:1] == [name])
        assert line.split()[1] == default, line


@pytest.mark.parametrize(
    ("domain", "why"),
    [
        ("", "empty ingress domain"),  # Go: "settings validation: empty ingress domain"
        ("*.foo.bar.com", "invalid domain name"),  # Go's own test cases
        ("foo.bar.com-", "invalid domain name"),
        ("foo.ba!!!r.com", "invalid domain name"),
        ("my_apps.example.com", "cannot end a hostname an Ingress routes"),  # Go takes it
    ],
)
def test_a_bad_domain_stops_the_service_at_start_naming_the_variable(domain: str, why: str) -> None:
    failed = run(AP_DEPLOYMENT_INGRESS_STATIC_HOSTS="true", AP_DEPLOYMENT_INGRESS_DOMAIN=domain)
    assert failed.returncode == 2
    (line,) = [x for x in failed.stderr.splitlines() if "AP_DEPLOYMENT_INGRESS_DOMAIN" in x]
    assert why in line
    assert "Traceback" not in failed.stderr


def test_the_domain_counts_only_with_static_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AP_DEPLOYMENT_INGRESS_DOMAIN", "*.not-a-domain")
    assert ClusterSettings().ingress_domain() == ""  # Go checks it only with static hosts
    monkeypatch.setenv("AP_DEPLOYMENT_INGRESS_STATIC_HOSTS", "true")
    with pytest.raises(ValidationError):
        ClusterSettings()
    monkeypatch.setenv("AP_DEPLOYMENT_INGRESS_DOMAIN", "Apps.Example.com")
    assert ClusterSettings().ingress_domain() == "Apps.Example.com"


def test_the_provider_s_own_names_are_blocked_besides_the_operator_s_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AP_DEPLOYMENT_BLOCKED_HOSTNAMES", " Shop.Example.com ,.evil.org")
    monkeypatch.setenv("AP_CLUSTER_PUBLIC_HOSTNAME", "Provider.Example.com")
    monkeypatch.setenv("AP_DEPLOYMENT_INGRESS_STATIC_HOSTS", "true")
    monkeypatch.setenv("AP_DEPLOYMENT_INGRESS_DOMAIN", "ingress.example.com")
    assert ClusterSettings().blocked_hostnames() == [
        "shop.example.com",
        ".evil.org",
        "localhost",
        ".localhost",
        "provider.example.com",
        "ingress.example.com",
    ]
