"""Provider-API tokens: Akash's claims schema, ES256K and ES256KADR36 signatures, and what
each access level allows."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import pytest

from akchain import jwt
from akchain.keys import CURVE_ORDER, Signer

# Interoperability vectors published with Akash's chain-sdk (testdata/jwt): tokens signed by
# Akash's Go signer with the key of this test mnemonic (m/44'/118'/0'/0/0).
AKASH_MNEMONIC = (
    "addict worth drip violin note olive final pelican perfect feel goat game horror brass "
    "fence deposit dutch improve setup stuff frost spirit smart alien"
)
AKASH_ES256K = "eyJhbGciOiJFUzI1NksiLCJ0eXAiOiJKV1QifQ.eyJ2ZXJzaW9uIjoiIiwibGVhc2VzIjp7ImFjY2VzcyI6IiJ9fQ.fQFwGyhJDyF9i_zCX6IwJ43_arjs_1qJmxNSph6t8INMMZ7hBvrzwg0Ym8N06G7O_ZDw0mujQCfmOmR1jegnmA"
AKASH_ADR36_SCOPED = (
    "eyJhbGciOiJFUzI1NktBRFIzNiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJha2FzaDFxdWZhM3h6cmYzNHF2d3llamt"
    "odm5jNHBzZjQ5ZmZ0YXcwYXNtaCIsImV4cCI6MTc2MDQwNjc0MCwibmJmIjoxNzYwNDA0OTQwLCJpYXQiOjE3NjA"
    "0MDQ5NDAsInZlcnNpb24iOiJ2MSIsImxlYXNlcyI6eyJhY2Nlc3MiOiJzY29wZWQiLCJzY29wZSI6WyJzdGF0dXM"
    "iLCJzaGVsbCIsImV2ZW50cyIsImxvZ3MiXX19.dl8m8L0kExz2CCXvDXY65L0F3G7T21Zk5zfK_Ld78owfZrQbtN"
    "QW-FSsLtER2PFBwkEAgXgtrxl3kfImrEGLeg"
)
AKASH_ADR36_MISSPELT_ALG = (
    "eyJhbGciOiJFUzI1NktBUkQzNiIsInR5cCI6IkpXVCJ9.eyJ2ZXJzaW9uIjoiIiwibGVhc2VzIjp7ImFjY2VzcyI"
    "6IiJ9fQ.FkLJICFkfXXT9rLZ8MLCKypKoLOoKIjxDIX-cyTiGklh-2sK5T2DTV0e1YVMhwQyeAN4qcgjm1gHSXdb"
    "S-xrYQ"
)
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
PROVIDER = Signer.from_mnemonic(" ".join(["abandon"] * 11 + ["about"])).address


@pytest.fixture(scope="module")
def akash_key() -> Signer:
    return Signer.from_mnemonic(AKASH_MNEMONIC)


def test_akash_vectors_verify_with_the_mnemonics_key(akash_key: Signer) -> None:
    assert akash_key.address == "akash1qufa3xzrf34qvwyejkhvnc4psf49fftaw0asmh"
    at = dt.datetime.fromtimestamp(1760405000, dt.UTC)
    claims = jwt.check(AKASH_ADR36_SCOPED, akash_key.public_key, now=at)
    assert claims.iss == akash_key.address
    assert claims.leases.access == "scoped"
    assert claims.leases.scope == ["status", "shell", "events", "logs"]
    # the signature of this one is right; its claims are a stub (version "", no iss)
    with pytest.raises(jwt.TokenError, match="claims invalid"):
        jwt.check(AKASH_ES256K, akash_key.public_key, now=at)
    with pytest.raises(jwt.TokenError, match="algorithm 'ES256KARD36' is not one of"):
        jwt.check(AKASH_ADR36_MISSPELT_ALG, akash_key.public_key, now=at)
    with pytest.raises(jwt.TokenError, match="expired"):
        jwt.check(AKASH_ADR36_SCOPED, akash_key.public_key, now=at + dt.timedelta(hours=1))


@pytest.mark.parametrize("algorithm", jwt.ALGORITHMS)
def test_a_minted_token_checks_with_its_accounts_key_only(algorithm: str) -> None:
    signer, other = Signer.generate(), Signer.generate()
    token = jwt.mint(signer, {"access": "full"}, now=NOW, algorithm=algorithm)
    assert jwt.issuer(token) == signer.address
    claims = jwt.check(token, signer.public_key, now=NOW + dt.timedelta(minutes=1))
    assert (claims.iss, claims.version, claims.leases.access) == (signer.address, "v1", "full")
    assert claims.exp - claims.iat == 15 * 60
    with pytest.raises(jwt.TokenError, match="Signature verification failed"):
        jwt.check(token, other.public_key, now=NOW)


def _segments(token: str) -> list[str]:
    return token.split(".")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_changed_payload_or_a_high_s_signature_is_refused() -> None:
    signer = Signer.generate()
    header, payload, signature = _segments(jwt.mint(signer, {"access": "full"}, now=NOW))
    forged = _b64(base64.urlsafe_b64decode(payload + "==").replace(b"full", b"FULL"))
    with pytest.raises(jwt.TokenError, match="Signature verification failed"):
        jwt.check(f"{header}.{forged}.{signature}", signer.public_key, now=NOW)
    raw = base64.urlsafe_b64decode(signature + "==")
    s = int.from_bytes(raw[32:], "big")
    malleated = raw[:32] + (CURVE_ORDER - s).to_bytes(32, "big")
    with pytest.raises(jwt.TokenError, match="Signature verification failed"):
        jwt.check(f"{header}.{payload}.{_b64(malleated)}", signer.public_key, now=NOW)


def test_times_are_checked_with_a_small_leeway() -> None:
    signer = Signer.generate()
    token = jwt.mint(signer, {"access": "full"}, now=NOW, lifetime=dt.timedelta(minutes=1))
    jwt.check(token, signer.public_key, now=NOW + dt.timedelta(seconds=62))
    with pytest.raises(jwt.TokenError, match="expired"):
        jwt.check(token, signer.public_key, now=NOW + dt.timedelta(seconds=70))
    with pytest.raises(jwt.TokenError, match="not valid yet"):
        jwt.check(token, signer.public_key, now=NOW - dt.timedelta(seconds=30))


@pytest.mark.parametrize("garbage", ["", "abc", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
def test_garbage_is_not_a_token(garbage: str) -> None:
    signer = Signer.generate()
    with pytest.raises(jwt.TokenError):
        jwt.issuer(garbage)
    with pytest.raises(jwt.TokenError):
        jwt.check(garbage, signer.public_key, now=NOW)


def test_an_unsigned_token_is_refused() -> None:
    signer = Signer.generate()
    _, payload, _ = _segments(jwt.mint(signer, {"access": "full"}, now=NOW))
    header = _b64(b'{"alg":"none","typ":"JWT"}')
    with pytest.raises(jwt.TokenError, match="algorithm 'none' is not one of"):
        jwt.check(f"{header}.{payload}.", signer.public_key, now=NOW)


@pytest.mark.parametrize(
    ("leases", "error"),
    [
        ({"access": "full", "scope": ["logs"]}, "full access takes neither"),
        ({"access": "scoped"}, "scoped access needs a scope"),
        ({"access": "scoped", "scope": ["logs", "logs"]}, "twice"),
        ({"access": "scoped", "scope": ["dance"]}, "scope"),
        ({"access": "granular"}, "granular access needs permissions"),
        ({"access": "none"}, "access"),
        (
            {"access": "granular", "permissions": [{"provider": "akash1xyz", "access": "full"}]},
            "provider",
        ),
        (
            {
                "access": "granular",
                "permissions": [
                    {
                        "provider": PROVIDER,
                        "access": "granular",
                        "deployments": [
                            {"dseq": 1, "oseq": 1, "scope": ["logs"], "services": ["a"]}
                        ],
                    }
                ],
            },
            "oseq needs gseq",
        ),
    ],
)
def test_claims_follow_akashs_schema(leases: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        jwt.mint(Signer.generate(), leases, now=NOW)


GRANULAR = jwt.Leases.model_validate(
    {
        "access": "granular",
        "permissions": [
            {
                "provider": PROVIDER,
                "access": "granular",
                "deployments": [
                    {"dseq": 7, "scope": ["logs", "status"], "services": ["web"]},
                    {"dseq": 8, "gseq": 1, "oseq": 2, "scope": ["shell"], "services": ["db"]},
                ],
            }
        ],
    }
)


@pytest.mark.parametrize(
    ("leases", "ask", "allowed"),
    [
        (jwt.Leases(access="full"), ("shell", PROVIDER, 1), True),
        (jwt.Leases(access="scoped", scope=["logs"]), ("logs", PROVIDER, 1), True),
        (jwt.Leases(access="scoped", scope=["logs"]), ("shell", PROVIDER, 1), False),
        (GRANULAR, ("logs", PROVIDER, 7, 1, 1, ["web"]), True),
        (GRANULAR, ("status", PROVIDER, 7, 3, 9), True),
        (GRANULAR, ("logs", PROVIDER, 7, 1, 1, ["web", "db"]), False),
        (GRANULAR, ("shell", PROVIDER, 7, 1, 1, ["web"]), False),
        (GRANULAR, ("logs", PROVIDER, 6), False),
        (GRANULAR, ("shell", PROVIDER, 8, 1, 2, ["db"]), True),
        (GRANULAR, ("shell", PROVIDER, 8, 1, 3, ["db"]), False),
        (GRANULAR, ("logs", "akash1" + "q" * 38, 7, 1, 1, ["web"]), False),
        (GRANULAR, ("hostname-migrate", PROVIDER), False),
    ],
)
def test_what_each_access_level_allows(
    leases: jwt.Leases, ask: tuple[Any, ...], allowed: bool
) -> None:
    scope, provider, *lease = ask
    services = lease.pop() if lease and isinstance(lease[-1], list) else []
    where = dict(zip(("dseq", "gseq", "oseq"), lease, strict=False))
    refusal = leases.refusal(scope, provider, **where, services=services)
    assert (refusal is None) is allowed, refusal


def _unsigned(header: dict[str, Any] | str, payload: dict[str, Any] | str) -> str:
    def part(value: dict[str, Any] | str) -> str:
        text = value if isinstance(value, str) else json.dumps(value)
        return _b64(text.encode())

    return f"{part(header)}.{part(payload)}.{_b64(b'x' * 64)}"


ES256K = {"alg": "ES256K", "typ": "JWT"}


def _payload(signer: Signer, **changes: Any) -> dict[str, Any]:
    at = int(NOW.timestamp())
    claims = {"iss": signer.address, "iat": at, "nbf": at, "exp": at + 60, "version": "v1"}
    return claims | {"leases": {"access": "full"}} | changes


@pytest.mark.parametrize(
    ("header", "payload", "error"),
    [
        (ES256K, "[" * 5000 + "]" * 5000, "nests deeper than 16"),
        ("{" * 3000, {}, "header nests deeper"),
        (ES256K, {"iss": "../../../../akash/provider/v1beta4/providers/x"}, "at iss"),
        (ES256K, {"iss": "akash1" + "q" * 38}, "at iss"),  # the form, a bad checksum
        (ES256K, "exp", "not JSON"),
        (ES256K, '{"exp": ' + "9" * 5000 + "}", "not JSON"),  # over Python's digit limit
        ({"alg": ["ES256K"]}, {}, "algorithm 'list'"),
        ('"ES256K"', {}, "header is not a JSON object"),
    ],
)
def test_hostile_tokens_are_refused_before_parsing_or_lookup(
    header: dict[str, Any] | str, payload: dict[str, Any] | str, error: str
) -> None:
    with pytest.raises(jwt.TokenError, match=error):
        jwt.inspect(_unsigned(header, payload), now=NOW)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"exp": 10**400}, "at exp"),
        ({"exp": 1e300}, "at exp"),
        ({"nbf": -1}, "at nbf"),
        ({"iat": 1.5}, "at iat"),
        ({"jti": "j" * 300}, "at jti"),
        (
            {
                "leases": {
                    "access": "granular",
                    "permissions": [
                        {
                            "provider": PROVIDER,
                            "access": "granular",
                            "deployments": [
                                {"dseq": 10**30, "scope": ["logs"], "services": ["web"]}
                            ],
                        }
                    ],
                }
            },
            "dseq",
        ),
    ],
)
def test_times_and_ids_are_bounded(changes: dict[str, Any], error: str) -> None:
    token = _unsigned(ES256K, _payload(Signer.generate(), **changes))
    with pytest.raises(jwt.TokenError, match=error):
        jwt.inspect(token, now=NOW)


def test_a_token_is_inspected_without_its_key_and_bounded_in_size() -> None:
    signer = Signer.generate()
    token = jwt.mint(signer, {"access": "full"}, now=NOW)
    assert jwt.inspect(token, now=NOW).iss == signer.address
    with pytest.raises(jwt.TokenError, match="expired"):
        jwt.inspect(token, now=NOW + dt.timedelta(hours=1))
    with pytest.raises(jwt.TokenError, match="longer than 16384"):
        jwt.inspect(_unsigned(ES256K, _payload(signer, jti="j" * 20_000)), now=NOW)
    assert jwt.depth('{"a": "[[[{{", "b": [1, {"c": "\\"]"}]}') == 3
