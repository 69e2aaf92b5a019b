"""The Kubernetes namespace name of a lease, as the Go provider computes it.

Lowercase base32hex (RFC 4648 "extended hex" alphabet), without padding, of the SHA-224 of
the lease ID string ``owner/dseq/gseq/oseq/provider``: always 45 characters, a valid
DNS-1123 label, so an operator can move a cluster between the two implementations.
"""

from __future__ import annotations

import base64
import hashlib

from aktypes.ids import LeaseID


def lease_namespace(lease_id: LeaseID) -> str:
    """Namespace that holds every Kubernetes object of ``lease_id``."""
    digest = hashlib.sha224(str(lease_id).encode()).digest()
    return base64.b32hexencode(digest).decode().rstrip("=").lower()
