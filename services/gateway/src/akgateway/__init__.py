"""The provider's gateway: the tenant-facing API."""
