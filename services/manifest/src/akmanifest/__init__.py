"""The provider's manifest service."""
