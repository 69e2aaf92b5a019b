"""Deployment, group, order, bid and lease IDs with Akash's string forms.

    DeploymentID  owner/dseq
    GroupID       owner/dseq/gseq
    OrderID       owner/dseq/gseq/oseq
    BidID         owner/dseq/gseq/oseq/provider
    LeaseID       owner/dseq/gseq/oseq/provider

IDs are frozen, hashable and totally ordered by their fields. In JSON they travel as their
string form; they also accept Akash's object form (``{"owner": …, "dseq": …}``) on input.
Akash's bid sequence (``bseq``) is fixed at 0 by the chain and is not part of these IDs.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from aktypes.address import AkashAddress
from aktypes.errors import InvalidIDError

MAX_UINT32 = 2**32 - 1
MAX_UINT64 = 2**64 - 1

DSeq = Annotated[int, Field(ge=1, le=MAX_UINT64, strict=True)]
Seq32 = Annotated[int, Field(ge=1, le=MAX_UINT32, strict=True)]


def _parse_uint(text: str, what: str, maximum: int) -> int:
    if not text.isascii() or not text.isdigit():
        raise InvalidIDError(f"{what} {text!r} is not an unsigned integer")
    value = int(text)
    if not 1 <= value <= maximum:
        raise InvalidIDError(f"{what} {value} is out of range 1..{maximum}")
    return value


class _ID(BaseModel):
    """Shared behaviour: string form, parsing, ordering."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    _parts: ClassVar[tuple[str, ...]] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._parts)

    def __str__(self) -> str:
        return "/".join(str(part) for part in self._key())

    @classmethod
    def _split(cls, text: str) -> dict[str, Any]:
        """The fields of the string form, numbers checked; addresses are checked later."""
        if not isinstance(text, str):
            raise InvalidIDError(f"{cls.__name__} must be a string, got {type(text).__name__}")
        parts = text.split("/")
        if len(parts) != len(cls._parts):
            raise InvalidIDError(
                f"{cls.__name__} {text!r} must have {len(cls._parts)} parts "
                f"({'/'.join(cls._parts)}), got {len(parts)}"
            )
        values: dict[str, Any] = {}
        for name, part in zip(cls._parts, parts, strict=True):
            if name == "dseq":
                values[name] = _parse_uint(part, name, MAX_UINT64)
            elif name in ("gseq", "oseq"):
                values[name] = _parse_uint(part, name, MAX_UINT32)
            else:
                values[name] = part
        return values

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse the slash-separated string form; raise ``InvalidIDError`` when malformed."""
        try:
            return cls.model_validate(cls._split(text))
        except InvalidIDError:
            raise
        except ValueError as exc:
            raise InvalidIDError(f"{cls.__name__} {text!r}: {exc}") from exc

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return cls._split(data) if isinstance(data, str) else data

    @model_serializer(mode="plain")
    def _to_string(self) -> str:
        return str(self)

    def _compare_key(self, other: object) -> tuple[Any, ...]:
        if not isinstance(other, _ID) or type(other) is not type(self):
            raise TypeError(f"cannot compare {type(self).__name__} with {type(other).__name__}")
        return other._key()

    def __lt__(self, other: object) -> bool:
        return self._key() < self._compare_key(other)

    def __le__(self, other: object) -> bool:
        return self._key() <= self._compare_key(other)

    def __gt__(self, other: object) -> bool:
        return self._key() > self._compare_key(other)

    def __ge__(self, other: object) -> bool:
        return self._key() >= self._compare_key(other)


class DeploymentID(_ID):
    """A tenant's deployment: ``owner/dseq``."""

    _parts: ClassVar[tuple[str, ...]] = ("owner", "dseq")

    owner: AkashAddress
    dseq: DSeq

    def group(self, gseq: int) -> GroupID:
        return GroupID(owner=self.owner, dseq=self.dseq, gseq=gseq)


class GroupID(_ID):
    """One group of a deployment: ``owner/dseq/gseq``."""

    _parts: ClassVar[tuple[str, ...]] = ("owner", "dseq", "gseq")

    owner: AkashAddress
    dseq: DSeq
    gseq: Seq32

    @property
    def deployment_id(self) -> DeploymentID:
        return DeploymentID(owner=self.owner, dseq=self.dseq)

    def order(self, oseq: int) -> OrderID:
        return OrderID(owner=self.owner, dseq=self.dseq, gseq=self.gseq, oseq=oseq)


class OrderID(_ID):
    """The market order opened for a group: ``owner/dseq/gseq/oseq``."""

    _parts: ClassVar[tuple[str, ...]] = ("owner", "dseq", "gseq", "oseq")

    owner: AkashAddress
    dseq: DSeq
    gseq: Seq32
    oseq: Seq32

    @property
    def group_id(self) -> GroupID:
        return GroupID(owner=self.owner, dseq=self.dseq, gseq=self.gseq)

    @property
    def deployment_id(self) -> DeploymentID:
        return DeploymentID(owner=self.owner, dseq=self.dseq)

    def bid(self, provider: str) -> BidID:
        return BidID(
            owner=self.owner, dseq=self.dseq, gseq=self.gseq, oseq=self.oseq, provider=provider
        )


class _ProviderScoped(_ID):
    """Shared fields of bids and leases."""

    _parts: ClassVar[tuple[str, ...]] = ("owner", "dseq", "gseq", "oseq", "provider")

    owner: AkashAddress
    dseq: DSeq
    gseq: Seq32
    oseq: Seq32
    provider: AkashAddress

    @model_validator(mode="after")
    def _no_self_bid(self) -> Self:
        if self.owner == self.provider:
            raise ValueError("owner and provider are the same account (self-bid)")
        return self

    @property
    def order_id(self) -> OrderID:
        return OrderID(owner=self.owner, dseq=self.dseq, gseq=self.gseq, oseq=self.oseq)

    @property
    def group_id(self) -> GroupID:
        return GroupID(owner=self.owner, dseq=self.dseq, gseq=self.gseq)

    @property
    def deployment_id(self) -> DeploymentID:
        return DeploymentID(owner=self.owner, dseq=self.dseq)


class BidID(_ProviderScoped):
    """A provider's bid on an order: ``owner/dseq/gseq/oseq/provider``."""

    @property
    def lease_id(self) -> LeaseID:
        return LeaseID(**{name: getattr(self, name) for name in self._parts})


class LeaseID(_ProviderScoped):
    """The lease created from a winning bid: ``owner/dseq/gseq/oseq/provider``."""

    @property
    def bid_id(self) -> BidID:
        return BidID(**{name: getattr(self, name) for name in self._parts})
