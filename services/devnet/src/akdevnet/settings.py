"""Devnet settings (``AKDEVNET_*``): where its state lives, where it listens, how fast it goes."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m)?")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0}


def parse_duration(value: str | float) -> float:
    """Seconds from ``1.5``, ``"1s"``, ``"250ms"`` or ``"2m"``."""
    if isinstance(value, int | float):
        return float(value)
    match = DURATION.fullmatch(value.strip().lower())
    if match is None:
        raise ValueError(f"{value!r} is not a duration (examples: 1s, 250ms, 0.5)")
    return float(match[1]) * UNIT_SECONDS[match[2] or "s"]


def split_listen(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``"host:port"`` (``"[::1]:26657"`` for IPv6); port 0 is any free one."""
    host, _, port = address.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()):
        raise ValueError(f"listen address {address!r} must be host:port")
    if int(port) > 65535:
        raise ValueError(f"listen address {address!r}: port {int(port)} is not in 0-65535")
    return host.strip("[]"), int(port)


def http_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches ``host:port`` at."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)  # noqa: S104
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class DevnetSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="AKDEVNET_", extra="ignore", hide_input_in_errors=True
    )

    home: Path = Field(default=Path(".akdevnet"), description="genesis, key files and chain state")
    rpc_listen: str = Field(default="127.0.0.1:26657", description="CometBFT RPC address")
    lcd_listen: str = Field(default="127.0.0.1:1317", description="Cosmos REST (LCD) address")
    block_time: float = Field(default=1.0, ge=0.005, le=60.0, description="seconds between blocks")
    key_passphrase: SecretStr = Field(
        default=SecretStr("devnet"),
        description="passphrase of the devnet's own key files (throwaway keys for a local chain)",
    )

    @field_validator("block_time", mode="before")
    @classmethod
    def _duration(cls, value: str | float) -> float:
        return parse_duration(value)

    @field_validator("rpc_listen", "lcd_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        split_listen(value)
        return value

    @property
    def genesis_path(self) -> Path:
        return self.home / "genesis.yaml"

    @property
    def state_path(self) -> Path:
        return self.home / "state.db"

    @property
    def keys_dir(self) -> Path:
        return self.home / "keys"

    @property
    def rpc_url(self) -> str:
        return http_url(*split_listen(self.rpc_listen))

    @property
    def lcd_url(self) -> str:
        return http_url(*split_listen(self.lcd_listen))
