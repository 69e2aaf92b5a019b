"""The hostname a provider generates for a lease's HTTP service, as the Go provider does.

With static ingress hosts on (``--deployment-ingress-static-hosts``), every service of a
lease with an HTTP ingress expose gets ``<label>.<domain>`` besides the hostnames its SDL
accepts: the label is the UUIDv5 (SHA-1, DNS namespace) of the lease ID string
``owner/dseq/gseq/oseq/provider`` followed directly by the service name, in lowercase
base32hex (RFC 4648 "extended hex") without padding — 26 characters (Go's
``manifest.IngressHost``). Equal labels keep a lease's URI when the cluster moves between
the two providers.

:func:`is_domain_name` is Go's check of the domain (``util/validation.IsDomainName``):
dot-separated labels of letters, digits, ``-`` and ``_`` (no label starting or ending
with ``-``, none longer than 63), at most 253 characters, and not all digits.
"""

from __future__ import annotations

import base64
import uuid

from aktypes.ids import LeaseID


def ingress_host_label(lease_id: LeaseID, service: str) -> str:
    """The 26-character label Go's ``IngressHost`` makes for ``service`` of ``lease_id``."""
    uid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{lease_id}{service}")
    return base64.b32hexencode(uid.bytes).decode().rstrip("=").lower()


def ingress_host(lease_id: LeaseID, service: str, domain: str) -> str:
    """``<label>.<domain>``, lower-cased (hostnames are compared lower-cased everywhere)."""
    return f"{ingress_host_label(lease_id, service)}.{domain}".lower()


def is_domain_name(text: str) -> bool:
    """Whether Go's ``IsDomainName`` accepts ``text`` (a presentation-format name)."""
    size = len(text)
    if size == 0 or size > 254 or (size == 254 and not text.endswith(".")):
        return False
    last, non_numeric, label = ".", False, 0
    for char in text:
        if char.isascii() and (char.isalpha() or char == "_"):
            non_numeric = True
            label += 1
        elif char.isascii() and char.isdigit():
            label += 1
        elif char == "-":
            if last == ".":
                return False
            non_numeric = True
            label += 1
        elif char == ".":
            if last in ".-" or not 0 < label <= 63:
                return False
            label = 0
        else:
            return False
        last = char
    return last != "-" and label <= 63 and non_numeric
