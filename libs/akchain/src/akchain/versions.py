"""The Akash and Cosmos API versions this client speaks, recorded in one place.

Message type URLs, REST paths and event names all derive from these. They match the Akash
node that the provider (v0.2.16 of Akash's Go SDK, chain-sdk 55f1c68) talks to.
"""

from __future__ import annotations

from typing import Final

MARKET: Final = "v1beta5"  # MsgCreateBid, MsgCloseBid, MsgCreateLease, MsgWithdrawLease; queries
MARKET_TYPES: Final = "v1"  # IDs, LeaseClosedReason, events
DEPLOYMENT: Final = "v1beta4"  # MsgCreateDeployment…, GroupSpec; queries
DEPLOYMENT_TYPES: Final = "v1"  # DeploymentID, GroupID, events
ESCROW: Final = "v1"
PROVIDER: Final = "v1beta4"
AUDIT: Final = "v1"
CERT: Final = "v1"
RESOURCES: Final = "v1beta4"

COSMOS_TX: Final = "v1beta1"
COSMOS_BANK: Final = "v1beta1"
COSMOS_AUTH: Final = "v1beta1"

BECH32_PREFIX: Final = "akash"
COIN_TYPE: Final = 118  # Cosmos's SLIP-44 coin type, which Akash uses
HD_PATH: Final = f"m/44'/{COIN_TYPE}'/0'/0/0"

LCD_PATHS: Final = {
    "orders": f"/akash/market/{MARKET}/orders/list",
    "order": f"/akash/market/{MARKET}/orders/info",
    "bids": f"/akash/market/{MARKET}/bids/list",
    "bid": f"/akash/market/{MARKET}/bids/info",
    "leases": f"/akash/market/{MARKET}/leases/list",
    "lease": f"/akash/market/{MARKET}/leases/info",
    "deployments": f"/akash/deployment/{DEPLOYMENT}/deployments/list",
    "deployment": f"/akash/deployment/{DEPLOYMENT}/deployments/info",
    "group": f"/akash/deployment/{DEPLOYMENT}/groups/info",
    "escrow_accounts": f"/akash/escrow/{ESCROW}/types/accounts",
    "escrow_payments": f"/akash/escrow/{ESCROW}/types/payments",
    "providers": f"/akash/provider/{PROVIDER}/providers",
    "provider": f"/akash/provider/{PROVIDER}/providers/{{owner}}",
    "provider_attributes": f"/akash/audit/{AUDIT}/audit/attributes/{{owner}}/list",
    "provider_auditor_attributes": f"/akash/audit/{AUDIT}/audit/attributes/{{auditor}}/{{owner}}",
    "certificates": f"/akash/cert/{CERT}/certificates/list",
    "account": f"/cosmos/auth/{COSMOS_AUTH}/accounts/{{address}}",
    "balances": f"/cosmos/bank/{COSMOS_BANK}/balances/{{address}}",
}
