"""Chain relay settings. Akash's names where the Go provider has them (``AP_NODE``,
``AP_CHAIN_ID``, ``AP_GAS``, ``AP_GAS_PRICES``, ``AP_FEES``, ``AP_TX_BROADCAST_TIMEOUT``);
``AP_*`` names of our own for the rest. The process's own settings (``AP_CHAIN_HEALTH_LISTEN``,
``AP_INSTANCE_ID``, logs), ``REDIS_*`` and ``AKBUS_*`` come from the service runtime
(``python -m akchainsvc --help`` lists them all).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from akchain.tx import FEE_AMOUNT, Fee, fee_for
from akservice import Duration
from akservice.leadership import LeaderElectionSettings


class ChainSettings(LeaderElectionSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    node: str = Field(default="http://localhost:26657", description="CometBFT RPC of an Akash node")
    api: str = Field(default="http://localhost:1317", description="Cosmos REST (LCD) of the node")
    chain_id: str = Field(default="", description="expected chain id (empty: take the node's)")
    key_file: Path = Field(default=Path("provider-key.json"), description="the provider's key file")
    key_passphrase: SecretStr | None = Field(default=None, description="passphrase of the key file")
    key_passphrase_file: Path | None = Field(
        default=None, description="file holding the passphrase"
    )

    gas: int = Field(
        default=300_000, ge=50_000, description="gas limit per message of a transaction"
    )
    gas_prices: str = Field(default="0.025uakt", description="fee per unit of gas")
    fees: str = Field(default="", description="fixed fee per transaction, overrides gas prices")
    tx_broadcast_timeout: Duration = Field(
        default=30.0, gt=0, description="how long to wait for a transaction to be committed"
    )
    tx_poll_interval: Duration = Field(default=0.5, gt=0, description="commit polling interval")
    tx_max_attempts: int = Field(
        default=10, ge=1, description="signatures per command before failing"
    )
    tx_concurrency: int = Field(default=8, ge=1, description="transactions in flight at once")

    events_start_height: int | None = Field(
        default=None,
        ge=1,
        description="first height to relay when no cursor is stored (default: latest)",
    )
    events_poll_interval: Duration = Field(
        default=1.0, gt=0, description="polling when the websocket is down"
    )
    status_interval: Duration = Field(
        default=5.0, gt=0, description="how often status is published"
    )

    @field_validator("gas_prices", "fees")
    @classmethod
    def _coin(cls, value: str) -> str:
        if value and not FEE_AMOUNT.match(value.strip()):
            raise ValueError(f"{value!r} is not an amount with a denomination (example: 0.025uakt)")
        return value.strip()

    @model_validator(mode="after")
    def _passphrase_given(self) -> ChainSettings:
        if self.key_passphrase is None and self.key_passphrase_file is None:
            raise ValueError(
                "set AP_KEY_PASSPHRASE or AP_KEY_PASSPHRASE_FILE to unlock AP_KEY_FILE"
            )
        return self

    def passphrase(self) -> str:
        if self.key_passphrase is not None:
            return self.key_passphrase.get_secret_value()
        if self.key_passphrase_file is None:
            raise ValueError("no passphrase configured")
        return self.key_passphrase_file.read_text().rstrip("\n")

    def fee(self, messages: int) -> Fee:
        """Gas limit and fee for a transaction of ``messages`` messages."""
        return fee_for(gas=self.gas, gas_prices=self.gas_prices, fees=self.fees, messages=messages)
