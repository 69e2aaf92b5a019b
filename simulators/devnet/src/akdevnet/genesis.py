"""The devnet's genesis file (YAML): chain id, funded accounts, providers, auditors, params.

Accounts are named; elsewhere in the file a name stands for its address, so a genesis reads
``owner: provider`` rather than a bech32 string. ``akdevnet init`` writes one together with
the encrypted key files of every named account.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aktypes.address import AkashAddress


class GenesisError(ValueError):
    """The genesis file is missing or invalid; the message says where."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GenesisAccount(_Model):
    name: str
    address: AkashAddress
    balances: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


class GenesisProvider(_Model):
    owner: str  # account name or address
    host_uri: str
    attributes: dict[str, str] = Field(default_factory=dict)
    email: str = ""
    website: str = ""


class GenesisAudit(_Model):
    auditor: str
    provider: str
    attributes: dict[str, str]


class Params(_Model):
    """Market, deployment and escrow parameters (Akash's defaults unless set)."""

    deployment_min_deposit: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: {"uakt": 500_000, "uact": 500_000}
    )
    bid_min_deposit: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: {"uakt": 500_000, "uact": 500_000}
    )
    order_max_bids: Annotated[int, Field(ge=1)] = 20
    take_rate_percent: Annotated[int, Field(ge=0, le=100)] = 0
    gas_price_uakt: float = Field(default=0.0, ge=0, description="minimum fee per unit of gas")


class Genesis(_Model):
    chain_id: str = "akash-devnet-1"
    genesis_time: str = "2026-01-01T00:00:00Z"
    accounts: list[GenesisAccount]
    providers: list[GenesisProvider] = Field(default_factory=list)
    audits: list[GenesisAudit] = Field(default_factory=list)
    params: Params = Field(default_factory=Params)

    @model_validator(mode="after")
    def _names_resolve(self) -> Genesis:
        names = [a.name for a in self.accounts]
        if len(set(names)) != len(names):
            raise ValueError("account names must be unique")
        for provider in self.providers:
            self.address(provider.owner)
        for audit in self.audits:
            self.address(audit.auditor)
            self.address(audit.provider)
        return self

    def address(self, name_or_address: str) -> str:
        """An account's address from its name (or the address itself)."""
        for account in self.accounts:
            if name_or_address in (account.name, account.address):
                return account.address
        if name_or_address.startswith("akash1"):
            return name_or_address
        raise ValueError(f"no account named {name_or_address!r} in genesis")

    @classmethod
    def load(cls, path: Path) -> Genesis:
        try:
            data: Any = yaml.safe_load(path.read_text())
        except FileNotFoundError as exc:
            raise GenesisError(f"genesis file {path} does not exist (run `akdevnet init`)") from exc
        except yaml.YAMLError as exc:
            raise GenesisError(f"genesis file {path} is not valid YAML: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
            )
            raise GenesisError(f"genesis file {path}: {problems}") from exc

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))
