"""The chain modules: bank, deployment, market, escrow, provider and audit, cert."""
