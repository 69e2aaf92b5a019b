"""The provider's chain relay: chain events in exactly once, one serial transaction pipeline out."""
