"""Names of the keys the bus keeps next to the streams (all under ``akbus:``)."""

from __future__ import annotations

import uuid


def applied_key(group: str, key: str) -> str:
    """Marks that ``group`` applied the effects keyed by ``key``."""
    return f"akbus:applied:{group}:{key}"


def reply_key(command_id: str) -> str:
    """The reply sent to the command with envelope id ``command_id``."""
    return f"akbus:reply:{command_id}"


def reply_stream(producer: str) -> str:
    """A fresh stream on which one process receives its replies."""
    return f"akash.reply.{producer}.{uuid.uuid4().hex[:12]}"
