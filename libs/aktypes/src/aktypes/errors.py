"""Errors raised by the domain types.

Every error here is a ``ValueError``: bad input, never a bug or an I/O failure. Callers at a
boundary (CLI, gateway, bus handlers) turn them into a 4xx, an exit code or a dead letter.

    AkTypesError (ValueError)
     ├── InvalidAddressError        a bech32 address is malformed or has the wrong prefix
     ├── InvalidIDError             a deployment/group/order/bid/lease ID string is malformed
     ├── InvalidQuantityError       a CPU/memory/storage/GPU quantity cannot be parsed
     ├── InvalidPriceError          a decimal amount or denomination is invalid
     ├── GroupSpecError             a deployment group breaks the chain's rules and limits
     ├── SDLError                   an SDL file is invalid (carries every problem found)
     └── ManifestError              a manifest is invalid (carries every problem found)
          └── ManifestCrossValidationError   it does not match the deployment's groups
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aktypes.sdl.diagnostics import Diagnostic


class AkTypesError(ValueError):
    """Base class of every domain validation error."""


class InvalidAddressError(AkTypesError):
    """A bech32 account address is malformed, has a bad checksum or the wrong prefix."""


class InvalidIDError(AkTypesError):
    """A deployment, group, order, bid or lease ID is malformed."""


class InvalidQuantityError(AkTypesError):
    """A resource quantity (CPU, memory, storage, GPU) cannot be parsed."""


class InvalidPriceError(AkTypesError):
    """A decimal amount or a coin denomination is invalid."""


class GroupSpecError(AkTypesError):
    """A deployment group violates the chain's validation rules or limits."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class SDLError(AkTypesError):
    """An SDL document is invalid; ``diagnostics`` lists every problem, each with its path."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        errors = [d for d in self.diagnostics if d.is_error]
        super().__init__("\n".join(str(d) for d in errors) or "invalid SDL")


class ManifestError(AkTypesError):
    """A manifest is invalid; ``problems`` lists every problem found."""

    kind = "invalid manifest"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(f"{self.kind}: " + "; ".join(self.problems))


class ManifestCrossValidationError(ManifestError):
    """A manifest does not match the deployment groups stored on chain."""

    kind = "manifest cross-validation error"
