"""Akash's provider-API tokens (chain-sdk ``go/util/jwt``, ``specs/jwt-schema.json``).

A token is a JWT signed by the tenant's account key, whose issuer (``iss``) is that
account's address, so a provider checks it with the public key the chain records for the
account. Two algorithms: ``ES256K`` signs the JWT's signing input as a Cosmos key signs
anything (SHA-256, 64-byte ``r || s``, low S); ``ES256KADR36`` signs it wrapped in an ADR-36
off-chain sign document, as browser wallets can.

The claims say what the token allows (:class:`Leases`): ``full`` (everything), ``scoped``
(these actions on every lease), ``granular`` (per provider: full, scoped, or per deployment,
group, order and services). :meth:`Leases.refusal` answers whether an action is allowed.

A token is read defensively, as anything a stranger sends: at most :data:`MAX_TOKEN`
characters, header and payload JSON nested at most :data:`MAX_DEPTH` deep (checked before
they are parsed), times within :data:`MAX_TIME`, and an issuer that is a bech32 account
address. :func:`inspect` checks everything but the signature, so a caller can refuse a bad
token before it looks up the issuer's key.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, cast

from jwt import PyJWS
from jwt.algorithms import Algorithm
from jwt.exceptions import InvalidTokenError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from akchain.keys import Signer, address_of, verify
from aktypes.address import is_address
from aktypes.ids import MAX_UINT32, MAX_UINT64

Scope = Literal[
    "send-manifest",
    "get-manifest",
    "logs",
    "shell",
    "events",
    "status",
    "restart",
    "hostname-migrate",
    "ip-migrate",
    "attestation",
]
ALGORITHMS = ("ES256K", "ES256KADR36")
MAX_TOKEN = 16 * 1024  # characters: as much as an HTTP header line takes here
MAX_DEPTH = 16  # JSON nesting of a header or payload (Akash's claims nest 7 deep)
MAX_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z, the last second a JWT time may name


def _address(value: str) -> str:
    if not is_address(value):
        raise ValueError("not a bech32 akash account address")
    return value


Address = Annotated[str, Field(pattern=r"^akash1[a-z0-9]{38}$"), AfterValidator(_address)]
Time = Annotated[int, Field(ge=0, le=MAX_TIME)]


class TokenError(ValueError):
    """A token that does not authenticate its bearer; the message says why."""


def _scopes(value: list[Scope]) -> list[Scope]:
    if len(set(value)) != len(value):
        raise ValueError("scope lists an action twice")
    return value


Scopes = Annotated[list[Scope], Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DeploymentPermission(_Model):
    dseq: int = Field(ge=1, le=MAX_UINT64)
    scope: Scopes
    gseq: int | None = Field(default=None, ge=0, le=MAX_UINT32)
    oseq: int | None = Field(default=None, ge=0, le=MAX_UINT32)
    services: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> DeploymentPermission:
        _scopes(self.scope)
        if self.oseq is not None and self.gseq is None:
            raise ValueError("oseq needs gseq")
        if len(set(self.services)) != len(self.services):
            raise ValueError("services lists a service twice")
        return self

    def covers(self, dseq: int, gseq: int | None, oseq: int | None) -> bool:
        return (
            self.dseq == dseq
            and (not self.gseq or gseq is None or self.gseq == gseq)
            and (not self.oseq or oseq is None or self.oseq == oseq)
        )


class Permission(_Model):
    provider: Address
    access: Literal["full", "scoped", "granular"]
    scope: list[Scope] | None = None
    deployments: list[DeploymentPermission] | None = None

    @model_validator(mode="after")
    def _check(self) -> Permission:
        _shape(self.access, self.scope, "deployments", self.deployments)
        return self


class Leases(_Model):
    access: Literal["full", "scoped", "granular"]
    scope: list[Scope] | None = None
    permissions: list[Permission] | None = None

    @model_validator(mode="after")
    def _check(self) -> Leases:
        _shape(self.access, self.scope, "permissions", self.permissions)
        providers = [p.provider for p in self.permissions or ()]
        if len(set(providers)) != len(providers):
            raise ValueError("permissions name a provider twice")
        return self

    def names_services(self, provider: str) -> bool:
        """Whether these grants at ``provider`` are per deployment, so per service: then a
        request that names no service concerns every service of its lease, and each must be
        granted (:meth:`refusal` with all of them)."""
        if self.access != "granular":
            return False
        found = next((p for p in self.permissions or () if p.provider == provider), None)
        return found is not None and found.access == "granular"

    def refusal(
        self,
        scope: Scope,
        provider: str,
        *,
        dseq: int | None = None,
        gseq: int | None = None,
        oseq: int | None = None,
        services: Iterable[str] = (),
    ) -> str | None:
        """Why this token may not do ``scope`` at ``provider`` on that lease (None: it may).

        Services restrict what concerns services; ``services`` must be every service the
        request concerns (a request that names none concerns all of its lease's).
        """
        if self.access == "full":
            return None
        if self.access == "scoped":
            return None if scope in (self.scope or ()) else f"the token's scope lacks {scope}"
        found = next((p for p in self.permissions or () if p.provider == provider), None)
        if found is None:
            return f"the token grants nothing at provider {provider}"
        if found.access == "full":
            return None
        if found.access == "scoped":
            return None if scope in (found.scope or ()) else f"the token's scope lacks {scope}"
        if dseq is None:
            return f"the token grants {scope} only on named deployments"
        wanted = set(services)
        for grant in found.deployments or ():
            if (
                grant.covers(dseq, gseq, oseq)
                and scope in grant.scope
                and wanted <= set(grant.services)
            ):
                return None
        named = f" for services {sorted(wanted)}" if wanted else ""
        return f"the token does not grant {scope} on deployment {dseq}{named}"


def _shape(access: str, scope: list[Scope] | None, name: str, inner: list[Any] | None) -> None:
    if access == "full" and (scope or inner):
        raise ValueError(f"full access takes neither scope nor {name}")
    if access == "scoped":
        if inner:
            raise ValueError(f"scoped access takes no {name}")
        if not scope:
            raise ValueError("scoped access needs a scope")
        _scopes(scope)
    if access == "granular" and (not inner or scope):
        raise ValueError(f"granular access needs {name} and no scope")


class Claims(_Model):
    iss: Address
    iat: Time
    nbf: Time
    exp: Time
    jti: str | None = Field(default=None, min_length=1, max_length=256)
    version: Literal["v1"]
    leases: Leases

    @model_validator(mode="after")
    def _check(self) -> Claims:
        if not self.nbf <= self.iat <= self.exp:
            raise ValueError("times out of order: needs nbf <= iat <= exp")
        return self


# -- signing --------------------------------------------------------------------------------


def adr36_sign_bytes(signer: str, data: bytes) -> bytes:
    """The ADR-36 sign document of ``data`` (amino JSON, sorted keys, no spaces)."""
    doc = {
        "account_number": "0",
        "chain_id": "",
        "fee": {"amount": [], "gas": "0"},
        "memo": "",
        "msgs": [
            {
                "type": "sign/MsgSignData",
                "value": {"data": base64.b64encode(data).decode(), "signer": signer},
            }
        ],
        "sequence": "0",
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


class _CosmosKey(Algorithm):
    """A Cosmos secp256k1 key as a PyJWT algorithm: signs with a :class:`Signer`, verifies
    with a compressed public key."""

    def __init__(self, adr36: bool) -> None:
        self.adr36 = adr36

    def _message(self, msg: bytes, public_key: bytes) -> bytes:
        return adr36_sign_bytes(address_of(public_key), msg) if self.adr36 else msg

    def prepare_key(self, key: Any) -> Any:
        if isinstance(key, Signer) or (isinstance(key, bytes) and len(key) == 33):
            return key
        raise InvalidTokenError("expected a Signer or a 33-byte compressed public key")

    def sign(self, msg: bytes, key: Any) -> bytes:
        return bytes(key.sign(self._message(msg, key.public_key)))

    def verify(self, msg: bytes, key: Any, sig: bytes) -> bool:
        return verify(key, self._message(msg, key), sig)

    @staticmethod
    def to_jwk(key_obj: Any, as_dict: bool = False) -> Any:
        raise NotImplementedError("Cosmos account keys are not exchanged as JWKs")

    @staticmethod
    def from_jwk(jwk: str | Mapping[str, Any]) -> Any:
        raise NotImplementedError("Cosmos account keys are not exchanged as JWKs")


_JWS = PyJWS(algorithms=[])
_JWS.register_algorithm("ES256K", _CosmosKey(adr36=False))
_JWS.register_algorithm("ES256KADR36", _CosmosKey(adr36=True))


def _epoch(at: dt.datetime) -> int:
    return int(at.timestamp())


def mint(
    signer: Signer,
    leases: Leases | Mapping[str, Any],
    *,
    lifetime: dt.timedelta = dt.timedelta(minutes=15),
    now: dt.datetime | None = None,
    algorithm: str = "ES256K",
    jti: str | None = None,
) -> str:
    """A token of ``signer``'s account granting ``leases``, valid from now for ``lifetime``."""
    at = now or dt.datetime.now(dt.UTC)
    claims = Claims(
        iss=signer.address,
        iat=_epoch(at),
        nbf=_epoch(at),
        exp=_epoch(at + lifetime),
        jti=jti,
        version="v1",
        leases=leases if isinstance(leases, Leases) else Leases.model_validate(leases),
    )
    payload = json.dumps(claims.model_dump(exclude_none=True), separators=(",", ":"))
    return _JWS.encode(
        payload.encode(), cast(Any, signer), algorithm=algorithm, headers={"typ": "JWT"}
    )


def depth(text: str) -> int:
    """How deep the JSON ``text`` nests arrays and objects (brackets in strings do not
    count), found without parsing it, so a hostile document cannot exhaust the parser."""
    deepest = level = 0
    quoted = escaped = False
    for char in text:
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def _segment(text: str, what: str) -> dict[str, Any]:
    """A token's header or payload as a JSON object, its size and depth checked first."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        decoded = raw.decode()
    except (ValueError, UnicodeDecodeError):
        raise TokenError(f"not a JWT: the {what} is not base64url-encoded UTF-8") from None
    if depth(decoded) > MAX_DEPTH:
        raise TokenError(f"not a JWT: the {what} nests deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(decoded)
    except ValueError:
        raise TokenError(f"not a JWT: the {what} is not JSON") from None
    if not isinstance(value, dict):
        raise TokenError(f"not a JWT: the {what} is not a JSON object")
    return value


def _claims(payload: dict[str, Any]) -> Claims:
    try:
        return Claims.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "claims"
        raise TokenError(f"token claims invalid at {where}: {first['msg']}") from None


def _opened(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and payload of a token of the right shape and size, not yet verified."""
    if len(token) > MAX_TOKEN:
        raise TokenError(f"not a JWT: longer than {MAX_TOKEN} characters")
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("not a JWT: expected three dot-separated parts")
    header = _segment(parts[0], "header")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        shown = alg if isinstance(alg, str) else type(alg).__name__
        raise TokenError(f"token refused: algorithm {shown[:40]!r} is not one of {ALGORITHMS}")
    return header, _segment(parts[1], "payload")


def _in_time(claims: Claims, now: dt.datetime | None, leeway: float) -> None:
    instant = (now or dt.datetime.now(dt.UTC)).timestamp()
    if instant > claims.exp + leeway:
        raise TokenError("token expired")
    if instant + leeway < claims.nbf:
        raise TokenError("token not valid yet (nbf is in the future)")


def inspect(token: str, *, now: dt.datetime | None = None, leeway: float = 5.0) -> Claims:
    """The claims of ``token`` if they are valid now, its signature NOT checked: what can
    be refused before the issuer's key is looked up."""
    _, payload = _opened(token)
    claims = _claims(payload)
    _in_time(claims, now, leeway)
    return claims


def issuer(token: str) -> str:
    """The account a token claims to come from (a valid address), before its signature is
    checked."""
    _, payload = _opened(token)
    found = payload.get("iss")
    if not isinstance(found, str) or not found:
        raise TokenError("the token names no issuer (iss)")
    if not is_address(found):
        raise TokenError("token claims invalid at iss: not a bech32 akash account address")
    return found


def check(
    token: str, public_key: bytes, *, now: dt.datetime | None = None, leeway: float = 5.0
) -> Claims:
    """The claims of ``token`` if ``public_key`` signed it and it is valid now."""
    _opened(token)
    try:
        decoded = _JWS.decode_complete(token, public_key, algorithms=list(ALGORITHMS))
    except InvalidTokenError as exc:
        raise TokenError(f"token refused: {exc}") from None
    claims = _claims(json.loads(decoded["payload"]))
    if address_of(public_key) != claims.iss:
        raise TokenError(f"the key that signed the token is not {claims.iss}'s")
    _in_time(claims, now, leeway)
    return claims
