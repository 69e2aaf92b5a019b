"""The ``akash-provider`` command line."""
