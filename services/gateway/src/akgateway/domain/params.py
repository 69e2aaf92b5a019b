"""Numbers in request paths and queries, read one way only.

A number is plain ASCII digits without a sign, spaces, separators or leading zeros
(``0`` itself excepted): ``+1``, ``1.0``, ``0_1``, `` 1``, ``²`` and ``01`` are all refused
with a 400. Python would read most of them as 1 (``int()``, pydantic's lax mode) while
``str.isdigit()`` rejects some and accepts others, so two readers of one request could
disagree about which lease it names; with one spelling per number the grant check, the
handler, the logs and the metrics all see the same value. Akash's clients write numbers
with Go's ``strconv.FormatUint``, which never writes a leading zero (Go's ``ParseUint``
would read ``01``; this gateway refuses it: canonical is the point).

Pure: no I/O. The REST routes (:mod:`akgateway.api.routes`, through :data:`Digits` in their
path types), the authorization dependency (:func:`akgateway.api.auth.scoped`), the websockets
and their query parameters (:mod:`akgateway.domain.streams`) all read numbers here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BeforeValidator

from akgateway.errors import BadRequest
from aktypes.ids import MAX_UINT32, MAX_UINT64

MAX_DIGITS = 20  # 2**64 - 1 has 20 digits
_CANONICAL = re.compile(r"0|[1-9][0-9]*")


def plain_digits(value: Any) -> Any:
    """``value`` unchanged if it is a number's canonical spelling (or already an int);
    ValueError otherwise (for pydantic, which then reads it as an int)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or len(value) > MAX_DIGITS or not _CANONICAL.fullmatch(value):
        raise ValueError("expected a number in plain ASCII digits, without sign or leading zero")
    return value


Digits = BeforeValidator(plain_digits)
"""Metadata for an ``Annotated[int, …]`` request parameter: canonical spelling only."""


def number(text: str, name: str, low: int, high: int) -> int:
    """``text`` as a number from ``low`` to ``high``; :class:`BadRequest` naming ``name``."""
    try:
        plain_digits(text)
    except ValueError:
        shown = text if len(text) <= 24 else f"{text[:24]}…"
        raise BadRequest(
            f"{name}: {shown!r} is not a number from {low} to {high} "
            "(plain ASCII digits, no sign, no leading zero)"
        ) from None
    value = int(text)
    if not low <= value <= high:
        raise BadRequest(f"{name}: {value} is not a number from {low} to {high}")
    return value


def lease_numbers(params: Mapping[str, Any]) -> dict[str, int]:
    """The ``dseq``, ``gseq`` and ``oseq`` among a request's path parameters, read here once."""
    tops = {"dseq": MAX_UINT64, "gseq": MAX_UINT32, "oseq": MAX_UINT32}
    return {
        name: number(str(params[name]), name, 1, top)
        for name, top in tops.items()
        if name in params
    }
