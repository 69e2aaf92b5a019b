"""Devnet settings (``AKDEVNET_*``): where its state lives, where it listens, how fast it goes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from aktypes.duration import Duration


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
    grpc_listen: str = Field(
        default="", description="Cosmos gRPC query address (empty: no gRPC server)"
    )
    block_time: Duration = Field(
        default=1.0, ge=0.005, le=60.0, description="time between blocks (250ms, 1s, 0.5)"
    )
    key_passphrase: SecretStr = Field(
        default=SecretStr("devnet"),
        description="passphrase of the devnet's own key files (throwaway keys for a local chain)",
    )

    @field_validator("rpc_listen", "lcd_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        split_listen(value)
        return value

    @field_validator("grpc_listen")
    @classmethod
    def _optional_listen(cls, value: str) -> str:
        if value:
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
