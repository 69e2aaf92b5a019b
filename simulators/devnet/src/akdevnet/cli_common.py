"""What the ``akdevnet`` commands share: the typer apps, options with the ``AKDEVNET_*``
variables behind them, option values checked into one-line errors, key files by name and
the certificates ``tenant cert`` saved, and the way to the devnet (``--node``/``--lcd``,
else where the home's devnet says it listens).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError

from akchain.errors import ChainError, KeyFileError
from akchain.keys import Signer
from akchain.lcd import LCDClient
from akchain.rpc import RPCClient
from akchain.wallet import Wallet
from akdevnet.genesis import GenesisError
from akdevnet.homedir import HomeInUse, KeyNameError, check_key_name, key_path, read_endpoints
from akdevnet.settings import DevnetSettings
from akdevnet.tenant import ClientCertificate, Tenant
from aktypes.coin import Coin, DecCoin
from aktypes.errors import SDLError
from aktypes.sdl import SDL, parse_sdl

T = TypeVar("T")
MAX_UINT64 = 2**64 - 1

app = typer.Typer(
    help="A local Akash-like chain for the provider, with tenant tools.",
    epilog="Key files are encrypted with AKDEVNET_KEY_PASSPHRASE (default: devnet).",
    no_args_is_help=True,
)
tenant_app = typer.Typer(help="Act as a tenant on the chain.", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")

Home = Annotated[
    Path | None, typer.Option("--home", envvar="AKDEVNET_HOME", help="devnet home folder")
]
KeyName = Annotated[
    str,
    typer.Option("--key", "-k", help="key name in the home's keys/, or a key file path (*.json)"),
]
Node = Annotated[
    str | None,
    typer.Option(
        "--node", envvar="AKDEVNET_NODE", help="RPC URL (default: where the home's devnet listens)"
    ),
]
Lcd = Annotated[
    str | None,
    typer.Option(
        "--lcd", envvar="AKDEVNET_LCD", help="LCD URL (default: where the home's devnet listens)"
    ),
]
Dseq = Annotated[int, typer.Argument(min=1, max=MAX_UINT64, help="deployment sequence")]
ProviderUrl = Annotated[
    str | None, typer.Option(help="gateway URL (default: the provider's host URI on chain)")
]
VerifyProvider = Annotated[
    bool,
    typer.Option(
        "--verify-provider/--no-verify-provider",
        help="the gateway must present the provider's certificate published on chain",
    ),
]

SETTING_OPTIONS = {
    "home": "--home",
    "rpc_listen": "--rpc",
    "lcd_listen": "--lcd",
    "grpc_listen": "--grpc",
    "block_time": "--block-time",
    "key_passphrase": "passphrase",
}


class BadOption(Exception):
    """An option value that does not fit what is on chain (e.g. a price in another denom)."""


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; raise the result to exit with status 1."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(1)


def settings_of(home: Path | None, **overrides: Any) -> DevnetSettings:
    """The devnet's settings from the environment and the options given."""
    values = {k: v for k, v in overrides.items() if v is not None}
    if home is not None:
        values["home"] = home
    try:
        return DevnetSettings(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        option = SETTING_OPTIONS.get(field, field)
        reason = str(error["msg"]).removeprefix("Value error, ")
        raise fail(f"{option} (AKDEVNET_{field.upper()}): {reason}") from None


def run(work: Awaitable[T]) -> T:
    """Run ``work``; what goes wrong on the chain or with files ends as one error line."""
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except (
        ChainError,
        KeyFileError,
        GenesisError,
        SDLError,
        HomeInUse,
        BadOption,
        TimeoutError,
        LookupError,
        OSError,
    ) as exc:
        raise fail(str(exc)) from None


def key_name(name: str, option: str = "--key") -> str:
    """A valid key name, or a one-line error naming ``option``."""
    try:
        return check_key_name(name)
    except KeyNameError as exc:
        raise fail(f"{option}: {exc}") from None


def key_file(settings: DevnetSettings, name: str) -> Path:
    """The key file a ``--key`` value names: a ``*.json`` path, or a name in the home's keys/."""
    if name.endswith(".json"):
        return Path(name)
    return key_path(settings.keys_dir, key_name(name))


def load_key(settings: DevnetSettings, name: str) -> Signer:
    try:
        return Signer.load(key_file(settings, name), settings.key_passphrase.get_secret_value())
    except KeyFileError as exc:
        raise fail(str(exc)) from None


def cert_name(key: str) -> str:
    return key_name(Path(key).stem if key.endswith(".json") else key)


def saved_certificate(settings: DevnetSettings, key: str) -> ClientCertificate | None:
    """The certificate ``tenant cert`` saved for ``key`` (None: there is none)."""
    name = cert_name(key)
    try:
        return ClientCertificate(
            (settings.home / "certs" / f"{name}.crt").read_bytes(),
            (settings.home / "certs" / f"{name}.key").read_bytes(),
        )
    except FileNotFoundError:
        return None


def required_certificate(settings: DevnetSettings, key: str) -> ClientCertificate:
    certificate = saved_certificate(settings, key)
    if certificate is None:
        raise fail(f"no saved certificate for {cert_name(key)!r}; run `akdevnet tenant cert` first")
    return certificate


def coin(option: str, text: str) -> Coin:
    try:
        return Coin.parse(text)
    except ValueError:
        raise fail(
            f"{option} {text!r} is not a coin: an integer amount and a denomination, "
            "e.g. 5000000uact"
        ) from None


def coins(option: str, text: str) -> list[Coin]:
    return [coin(option, part) for part in text.split(",") if part]


def price(option: str, text: str) -> DecCoin:
    try:
        parsed = DecCoin.parse(text)
    except ValueError:
        parsed = None
    if parsed is None or parsed.amount.is_negative():
        raise fail(
            f"{option} {text!r} is not a price: a non-negative decimal amount and a "
            "denomination, e.g. 0.5uact"
        )
    return parsed


def read_sdl(path: Path) -> SDL:
    try:
        return parse_sdl(path.read_bytes())
    except FileNotFoundError:
        raise fail(f"SDL file {path} does not exist") from None
    except IsADirectoryError:
        raise fail(f"SDL file {path} is a folder") from None
    except SDLError as exc:
        problems = "\n  ".join(str(d) for d in exc.diagnostics)
        raise fail(f"{path} is not a valid SDL:\n  {problems}") from None


@asynccontextmanager
async def chain(
    settings: DevnetSettings, node: str | None, lcd: str | None
) -> AsyncIterator[tuple[RPCClient, LCDClient, str]]:
    """Clients on the chain: ``--node``/``--lcd``, else the home's running devnet, else the
    listen addresses of the settings."""
    recorded = read_endpoints(settings.home)
    rpc_url = node or (recorded.rpc if recorded else settings.rpc_url)
    lcd_url = lcd or (recorded.lcd if recorded else settings.lcd_url)
    async with RPCClient(rpc_url) as rpc, LCDClient(lcd_url) as rest:
        status = await rpc.status()
        yield rpc, rest, status.chain_id


async def with_tenant(
    settings: DevnetSettings,
    signer: Signer,
    node: str | None,
    lcd: str | None,
    work: Callable[[Tenant], Awaitable[T]],
) -> T:
    async with chain(settings, node, lcd) as (rpc, rest, chain_id):
        return await work(Tenant(Wallet(signer, rpc, rest, chain_id=chain_id), rest))
