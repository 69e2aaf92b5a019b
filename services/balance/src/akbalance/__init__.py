"""The provider's balance service: it watches each lease's escrow, withdraws earnings when a
lease runs dry and periodically (when worth its fee), and sweeps the excess to a cold wallet."""
