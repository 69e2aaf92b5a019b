"""``akash-provider cluster``: bring an existing Kubernetes cluster under the provider.

- ``onboard --kubeconfig PATH``: check that the cluster answers, runs Kubernetes 1.27+ and
  grants every permission the provider's RBAC lists; when something is missing, say what
  and change nothing (exit code 1); else install or upgrade Akash's CRDs, make the
  provider's namespaces, report nodes, GPUs, storage classes and warnings, and seal the
  kubeconfig (and, with ``--provider-key``, the provider's key file) with the key file
  ``--key-file`` so the services can open them;
- ``check --kubeconfig PATH``: the same checks, read-only;
- ``rotate-key``: re-seal every sealed file with a new key.

The work is :mod:`akoperators.onboard` and :mod:`akservice.secrets` (imported when a
command runs: they bring the Kubernetes client, which ``--help`` does not need).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from akoperators.domain.onboard import Report

DEFAULT_KEY_FILE = Path("~/.akash-provider/secret.key")

app = typer.Typer(
    help="An existing Kubernetes cluster: onboard it, check it, rotate the secrets' key.",
    no_args_is_help=True,
)
Kubeconfig = Annotated[
    Path,
    typer.Option(
        "--kubeconfig",
        exists=True,
        dir_okay=False,
        readable=True,
        help="The kubeconfig the provider's services will use.",
    ),
]
KeyFile = Annotated[
    Path,
    typer.Option(
        "--key-file",
        help="The key file secrets are sealed with (made, 0600, when missing); sealed files "
        "go beside it.",
    ),
]


@app.command()
def onboard(
    kubeconfig: Kubeconfig,
    key_file: KeyFile = DEFAULT_KEY_FILE,
    store: Annotated[
        bool, typer.Option("--store/--no-store", help="Seal the kubeconfig with the key file.")
    ] = True,
    provider_key: Annotated[
        Path | None,
        typer.Option(
            "--provider-key",
            exists=True,
            dir_okay=False,
            help="The provider's key file, to seal too (with --store).",
        ),
    ] = None,
) -> None:
    """Check the cluster and, when it has all the provider needs, set it up."""
    from akcluster.domain.objects.custom import crds  # noqa: PLC0415 - see the module
    from akoperators import onboard as onboarding  # noqa: PLC0415
    from akservice.secrets import PROVIDER_KEY, Vault, VaultError  # noqa: PLC0415

    vault = Vault(key_file) if store else None
    try:
        report = asyncio.run(onboarding.onboard(kubeconfig, crds(), vault=vault))
        if vault is not None and provider_key is not None and report.complete:
            report.sealed.append(str(vault.seal_file(PROVIDER_KEY, provider_key)))
    except VaultError as exc:
        typer.echo(f"akash-provider: {exc}", err=True)
        raise typer.Exit(code=1) from None
    _finish(report)


@app.command()
def check(kubeconfig: Kubeconfig) -> None:
    """The same checks as onboard, changing nothing: exit code 1 when anything is missing."""
    from akcluster.domain.objects.custom import crds  # noqa: PLC0415 - see the module
    from akoperators import onboard as onboarding  # noqa: PLC0415

    _finish(asyncio.run(onboarding.check(kubeconfig, crds())))


@app.command("rotate-key")
def rotate_key(key_file: KeyFile = DEFAULT_KEY_FILE) -> None:
    """Re-seal every sealed file with a new key; the old key then opens nothing.

    An interrupted rotation loses nothing: the next run finishes it first."""
    from akservice.secrets import Vault, VaultError, key_id, read_key  # noqa: PLC0415

    vault = Vault(key_file)
    try:
        resealed = vault.rotate()
        new = key_id(read_key(vault.key_file))
    except VaultError as exc:
        typer.echo(f"akash-provider: {exc}", err=True)
        raise typer.Exit(code=1) from None
    names = ", ".join(resealed) or "none"
    typer.echo(f"New key {new} in {vault.key_file}; re-sealed: {names}.")


def _finish(report: Report) -> None:
    typer.echo(report.render())
    raise typer.Exit(code=0 if report.complete else 1)
