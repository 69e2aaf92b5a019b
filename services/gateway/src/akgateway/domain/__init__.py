"""Pure logic of the gateway: certificates, answers, status aggregation (no I/O)."""
