"""Balance service settings, with Akash's names where Akash has one.

``AP_WITHDRAWAL_PERIOD`` (Akash: 24h; 0 turns periodic withdrawals off),
``AP_LEASE_FUNDS_MONITOR_INTERVAL`` (10m, between 1m and 24h) and ``AP_MINIMUM_BALANCE``
(Akash parses it and ignores it; here the bid engine stops bidding below it and this
service warns) keep Akash's meaning. ``AP_GAS``, ``AP_GAS_PRICES`` and ``AP_FEES`` are the
chain relay's: this service reads them to know what a withdrawal costs. The rest is ours.
"""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akbalance.domain.funds import Policy
from akchain.tx import fee_for
from akservice import Duration
from aktypes.coin import Coin, Dec

_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z][a-zA-Z0-9/:._-]{2,127})\s*$")


def amounts(text: str, name: str) -> dict[str, Dec]:
    """``"1000uact,500uakt"`` as {denom: amount}."""
    found: dict[str, Dec] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _AMOUNT.match(part)
        if match is None:
            raise ValueError(f"{name}: {part!r} is not an amount with a denomination (1000uact)")
        found[match.group(2)] = Dec(match.group(1))
    return found


class BalanceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore", hide_input_in_errors=True)

    api: str = Field(default="http://localhost:1317", description="Cosmos REST (LCD) of the node")
    node: str = Field(
        default="http://localhost:26657", description="CometBFT RPC of the node (heights, sync)"
    )
    provider_address: str = Field(
        default="", description="the provider's account (empty: the chain relay's, from its status)"
    )
    withdrawal_period: Duration = Field(
        default=24 * 3600.0, ge=0, description="withdraw each lease this often (0: only when dry)"
    )
    lease_funds_monitor_interval: Duration = Field(
        default=600.0,
        ge=1,  # Akash: 1m at least; shorter intervals are for test chains
        le=86400,
        description="look at each lease's escrow at least this often",
    )
    minimum_balance: str = Field(
        default="",
        description="warn, and the bid engine stops bidding, below this balance (e.g. 5000000uakt)",
    )
    withdrawal_min_amount: str = Field(
        default="", description="skip periodic withdrawals collecting less (e.g. 1000000uact)"
    )
    withdrawal_fee_multiple: Decimal = Field(
        default=Decimal(2),
        ge=0,
        description="skip periodic withdrawals collecting less than this many times their fee",
    )
    withdrawal_fee_value: str = Field(
        default="",
        description="worth of one unit of the fee's denom in lease denoms (e.g. 1.5uact)",
    )
    withdrawal_batch: int = Field(
        default=10, ge=1, le=100, description="leases withdrawn in one transaction at most"
    )
    withdrawal_dry_recheck: Duration = Field(
        default=600.0, gt=0, description="look at a lease again this long after it ran dry"
    )
    withdrawal_retry: Duration = Field(
        default=60.0, gt=0, description="look again this long after a failed check or withdrawal"
    )
    recovery_window: Duration = Field(
        default=60.0, ge=0, description="spread the checks of leases recovered at start over this"
    )
    average_block_time: Duration = Field(
        default=6.0, gt=0, description="block time assumed until the chain's own is measured"
    )
    sweep_address: str = Field(
        default="", description="send earnings above AP_SWEEP_KEEP here (empty: no sweep)"
    )
    sweep_keep: str = Field(
        default="", description="what stays in the provider account, per denom (50000000uakt,…)"
    )
    sweep_interval: Duration = Field(default=3600.0, gt=0, description="look for excess this often")
    bid_deposit: str = Field(
        default="500000uakt", description="the bid engine's deposit per bid (kept for open bids)"
    )
    gas: int = Field(default=300_000, ge=50_000, description="the relay's gas per message")
    gas_prices: str = Field(default="0.025uakt", description="the relay's fee per unit of gas")
    fees: str = Field(default="", description="the relay's fixed fee per transaction")
    balance_status_interval: Duration = Field(
        default=5.0, gt=0, description="how often status is published"
    )

    @field_validator(
        "minimum_balance", "withdrawal_min_amount", "withdrawal_fee_value", "sweep_keep"
    )
    @classmethod
    def _amounts(cls, value: str) -> str:
        amounts(value, "amount")
        return value

    @field_validator("bid_deposit")
    @classmethod
    def _deposit(cls, value: str) -> str:
        Coin.parse(value)
        return value

    @model_validator(mode="after")
    def _sweep(self) -> BalanceSettings:
        if self.sweep_address and not self.sweep_keep:
            raise ValueError(
                "AP_SWEEP_ADDRESS needs AP_SWEEP_KEEP: what stays for fees and deposits"
            )
        if self.withdrawal_period and self.withdrawal_period < self.lease_funds_monitor_interval:
            raise ValueError(
                "AP_WITHDRAWAL_PERIOD must be 0 or at least AP_LEASE_FUNDS_MONITOR_INTERVAL"
            )
        return self

    def fee(self, messages: int = 1) -> Coin | None:
        """What the relay pays for a transaction of ``messages`` messages (its own rule)."""
        try:
            fee = fee_for(
                gas=self.gas, gas_prices=self.gas_prices, fees=self.fees, messages=messages
            )
        except ValueError:
            return None
        return Coin(denom=fee.denom, amount=fee.amount)

    def policy(self) -> Policy:
        return Policy(
            monitor_interval=self.lease_funds_monitor_interval,
            withdrawal_period=self.withdrawal_period,
            dry_recheck=self.withdrawal_dry_recheck,
            min_amount=amounts(self.withdrawal_min_amount, "AP_WITHDRAWAL_MIN_AMOUNT"),
            fee=self.fee(),
            fee_multiple=Dec(str(self.withdrawal_fee_multiple)),
            fee_value=amounts(self.withdrawal_fee_value, "AP_WITHDRAWAL_FEE_VALUE"),
        )

    def minimum(self) -> dict[str, Dec]:
        return amounts(self.minimum_balance, "AP_MINIMUM_BALANCE")

    def keep(self) -> dict[str, Dec]:
        return amounts(self.sweep_keep, "AP_SWEEP_KEEP")
