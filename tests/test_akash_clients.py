"""Akash's own client code (chain-sdk, cosmjs) against the provider and the devnet."""

from __future__ import annotations

from akcli.akashjs import AkashJS


def test_the_pinned_client_packages_are_installed_and_run(akashjs: AkashJS) -> None:
    answer = akashjs.run("probe.mjs", {"ping": 1})
    assert answer["echo"] == {"ping": 1}
    assert answer["chainSdk"] == "1.0.0-alpha.25"
    assert answer["stargate"] == "0.39.0"
    assert set(answer["exports"]) >= {"createProviderSDK"}
