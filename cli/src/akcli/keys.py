"""``akash-provider keys``: bring the provider's existing account key, show its address.

- ``import --mnemonic``: recover the key from a BIP39 mnemonic (checksum verified) at Akash's
  HD path ``m/44'/118'/0'/0/0`` (``--hd-path`` for another);
- ``import FILE``: decrypt what ``provider-services keys export`` wrote (the Cosmos SDK's
  armored private key; see :mod:`akchain.armor`);
- ``show``: print the address of the key store, nothing else.

The key lands in the encrypted key store the chain relay unlocks: ``--key-file``, else
``AP_KEY_FILE``, else ``provider-key.json``; its passphrase is ``AP_KEY_PASSPHRASE``, else
the content of ``AP_KEY_PASSPHRASE_FILE``, else asked for — the relay's own settings, so the
relay signs with the imported key as it is.

Secrets never come from the command line. On a terminal they are asked for without echo;
otherwise they are read from standard input, one a line, in the order asked: the mnemonic
or the export's passphrase, then the store's passphrase (unless set as above). Errors are
one line on standard error: exit code 1 for a refused input, 2 for a wrong use.
"""

from __future__ import annotations

import getpass
import os
import re
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from akchain.armor import unarmor_private_key
from akchain.errors import KeyFileError
from akchain.keys import Signer, key_file_address
from akchain.versions import HD_PATH

DEFAULT_KEY_FILE = Path("provider-key.json")
_HD_PATH = re.compile(r"^m(/\d+'?)+$")

app = typer.Typer(
    help="The provider's account key: import a mnemonic or an exported key, show the address.",
    no_args_is_help=True,
)
KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        help="The key store the chain relay reads (default: $AP_KEY_FILE, else provider-key.json).",
        show_default=False,
    ),
]


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"akash-provider keys: {message}", err=True)
    raise typer.Exit(code=code)


def key_store(option: Path | None) -> Path:
    """The key store: the option, else ``AP_KEY_FILE``, else ``provider-key.json``."""
    if option is not None:
        return option
    return Path(os.environ.get("AP_KEY_FILE") or DEFAULT_KEY_FILE)


def ask(what: str, *, confirm: bool = False) -> str:
    """A secret: asked without echo on a terminal, else the next line of standard input."""
    if sys.stdin.isatty():
        value = getpass.getpass(f"{what}: ", stream=sys.stderr)
        if confirm and getpass.getpass(f"{what} (again): ", stream=sys.stderr) != value:
            fail(f"the two entries of the {what} differ")
        return value
    line = sys.stdin.readline()
    if not line:
        fail(f"standard input ended before the {what}")
    return line.rstrip("\r\n")


def store_passphrase() -> str:
    """The key store's passphrase, found as the chain relay finds it, else asked for."""
    if value := os.environ.get("AP_KEY_PASSPHRASE"):
        return value
    if path := os.environ.get("AP_KEY_PASSPHRASE_FILE"):
        try:
            return Path(path).read_text().rstrip("\n")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"AP_KEY_PASSPHRASE_FILE {path}: {exc}")
    return ask("passphrase of the key store", confirm=True)


def _from_mnemonic(hd_path: str) -> Signer:
    words = " ".join(ask("BIP39 mnemonic").split())
    try:
        return Signer.from_mnemonic(words, path=hd_path)
    except ValueError as exc:
        fail(str(exc))


def _from_export(source: Path) -> Signer:
    try:
        text = source.read_text()
    except UnicodeDecodeError:
        fail(f"{source} is not text: not an exported key")
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}")
    passphrase = ask("passphrase of the exported key")
    try:
        return unarmor_private_key(text, passphrase)
    except KeyFileError as exc:
        fail(f"{source}: {exc}")


@app.command("import")
def import_key(  # noqa: PLR0917 - typer options
    source: Annotated[
        Path | None,
        typer.Argument(
            help="A file written by `provider-services keys export` (none with --mnemonic).",
            show_default=False,
        ),
    ] = None,
    mnemonic: Annotated[
        bool,
        typer.Option(
            "--mnemonic", help="Recover the key from a BIP39 mnemonic (standard input or a prompt)."
        ),
    ] = False,
    key_file: KeyFile = None,
    name: Annotated[str, typer.Option("--name", help="The key's name in the store.")] = "provider",
    hd_path: Annotated[
        str, typer.Option("--hd-path", help="BIP32 path of the account key (with --mnemonic).")
    ] = HD_PATH,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key store.")] = False,
) -> None:
    """Import the provider's key into the store the chain relay signs with."""
    if mnemonic == (source is not None):
        fail("give either an exported key FILE or --mnemonic", code=2)
    if not _HD_PATH.match(hd_path):
        fail(f"--hd-path {hd_path!r} is not a BIP32 path like {HD_PATH}", code=2)
    store = key_store(key_file)
    if store.exists() and not force:
        fail(f"{store} exists; --force replaces it")
    signer = _from_mnemonic(hd_path) if source is None else _from_export(source)
    passphrase = store_passphrase()
    if not passphrase:
        fail("the key store needs a passphrase")
    try:
        signer.save(store, passphrase, name=name)
    except OSError as exc:
        fail(f"cannot write {store}: {exc.strerror or exc}")
    typer.echo(f"{signer.address} imported into {store}")


@app.command()
def show(key_file: KeyFile = None) -> None:
    """Print the address of the key store (no passphrase needed)."""
    store = key_store(key_file)
    try:
        typer.echo(key_file_address(store))
    except KeyFileError as exc:
        fail(str(exc))
