"""The relay's own errors."""

from __future__ import annotations


class Refused(Exception):
    """The command cannot become a transaction of this account."""
