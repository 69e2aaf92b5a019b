"""Manifest models: the JSON a tenant PUTs to ``/deployment/{dseq}/manifest``.

Field names, ``null``s and omitted fields follow Akash's Go structs exactly (see
:mod:`aktypes.gojson`), because the manifest version is the SHA-256 of this JSON with its keys
sorted and must equal the hash the tenant put on chain. Unknown fields are ignored on input,
as Akash ignores them.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from pydantic import Field, RootModel, ValidationError

from aktypes.boundedjson import JSONBoundsError, check_json
from aktypes.errors import ManifestError
from aktypes.gojson import GoModel, UInt32, sorted_json
from aktypes.resources import Endpoint, EndpointKind, Resources

TCP = "TCP"
UDP = "UDP"

DEFAULT_MAX_BODY_SIZE = 1_048_576
DEFAULT_READ_TIMEOUT = 60_000
DEFAULT_SEND_TIMEOUT = 60_000
DEFAULT_NEXT_TRIES = 3
DEFAULT_NEXT_CASES = ("error", "timeout")
NEXT_CASES = ("error", "timeout", "500", "502", "503", "504", "403", "404", "429", "off")
"""The ``next_cases`` an SDL may name (Akash's SDL rules)."""
NGINX_NEXT_CASES = ("invalid_header", *(f"http_{c}" for c in NEXT_CASES if c[0].isdigit()))
"""The same cases as ingress-nginx spells them, also accepted in a manifest."""
MAX_BODY_SIZE = 104_857_600
MAX_PROXY_BUFFER_SIZE = 1_048_576
MAX_TIMEOUT = 60_000  # read and send timeouts, ms


class HTTPOptions(GoModel):
    """Ingress proxy settings of an HTTP expose (sizes in bytes, timeouts in ms)."""

    _omitempty = frozenset({"nextCases", "proxyBufferSize"})

    max_body_size: Annotated[UInt32, Field(alias="maxBodySize")] = 0
    read_timeout: Annotated[UInt32, Field(alias="readTimeout")] = 0
    send_timeout: Annotated[UInt32, Field(alias="sendTimeout")] = 0
    next_tries: Annotated[UInt32, Field(alias="nextTries")] = 0
    next_timeout: Annotated[UInt32, Field(alias="nextTimeout")] = 0
    next_cases: Annotated[list[str] | None, Field(alias="nextCases")] = None
    proxy_buffer_size: Annotated[UInt32, Field(alias="proxyBufferSize")] = 0


class ServiceExpose(GoModel):
    """One port a service exposes, to other services or globally."""

    port: UInt32 = 0
    external_port: Annotated[UInt32, Field(alias="externalPort")] = 0
    proto: str = ""
    service: str = ""
    global_: Annotated[bool, Field(alias="global")] = False
    hosts: list[str] | None = None
    http_options: Annotated[HTTPOptions, Field(alias="httpOptions")] = Field(
        default_factory=HTTPOptions
    )
    ip: str = ""
    endpoint_sequence_number: Annotated[UInt32, Field(alias="endpointSequenceNumber")] = 0

    @property
    def effective_external_port(self) -> int:
        return self.external_port or self.port

    @property
    def is_ingress(self) -> bool:
        """Global TCP on external port 80: served by the shared HTTP ingress."""
        return self.proto == TCP and self.global_ and self.effective_external_port == 80

    def endpoints(self) -> list[Endpoint]:
        """Endpoints this expose consumes, sorted by sequence number (Akash's order)."""
        if not self.global_:
            return []
        found: list[Endpoint] = []
        if self.ip:
            found.append(
                Endpoint(kind=EndpointKind.LEASED_IP, sequence_number=self.endpoint_sequence_number)
            )
        kind = EndpointKind.SHARED_HTTP if self.is_ingress else EndpointKind.RANDOM_PORT
        found.append(Endpoint(kind=kind))
        return sorted(found, key=lambda ep: ep.sequence_number)

    def sort_key(self) -> tuple[str, int, str, bool]:
        """Akash's expose order: service, port, protocol, then global before local."""
        return (self.service, self.port, self.proto, not self.global_)


class StorageParams(GoModel):
    name: str = ""
    mount: str = ""
    read_only: Annotated[bool, Field(alias="readOnly")] = False


class ServicePermissions(GoModel):
    _omitempty = frozenset({"read"})

    read: list[str] | None = None


class TEEParams(GoModel):
    type: str = ""
    attestation: bool = False


class ImageCredentials(GoModel):
    host: str = ""
    email: str = ""
    username: str = ""
    password: str = ""


class ServiceParams(GoModel):
    _omitempty = frozenset({"credentials", "permissions", "tee"})

    storage: list[StorageParams] | None = None
    credentials: ImageCredentials | None = None
    permissions: ServicePermissions | None = None
    tee: TEEParams | None = None


class Service(GoModel):
    """One service of a manifest group: image, command, resources and exposes."""

    _omitempty = frozenset({"params"})

    name: str = ""
    image: str = ""
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[str] | None = None
    resources: Resources = Field(default_factory=lambda: Resources(id=0))
    count: UInt32 = 0
    expose: list[ServiceExpose] | None = None
    params: ServiceParams | None = None
    credentials: ImageCredentials | None = None

    def endpoints(self) -> list[Endpoint]:
        return [ep for expose in self.expose or () for ep in expose.endpoints()]


class Group(GoModel):
    """The services placed together under one deployment group."""

    name: str = ""
    services: list[Service] | None = None


class Manifest(RootModel[list[Group]]):
    """What a tenant sends a provider: the services of every deployment group."""

    model_config = {"frozen": True, "strict": True}

    @property
    def groups(self) -> list[Group]:
        return self.root

    def group(self, name: str) -> Group | None:
        return next((g for g in self.root if g.name == name), None)

    def go_json(self) -> Any:
        """JSON-ready data with Akash's field names and nulls."""
        return self.model_dump(mode="json", by_alias=True)

    def canonical_json(self) -> bytes:
        """Compact, key-sorted JSON with Go's escaping: the bytes the version hashes."""
        return sorted_json(self.go_json())

    def version(self) -> bytes:
        """SHA-256 of the canonical JSON: the deployment ``hash`` on chain."""
        return hashlib.sha256(self.canonical_json()).digest()

    def version_hex(self) -> str:
        return self.version().hex()

    @classmethod
    def from_json(cls, data: str | bytes) -> Manifest:
        """Parse a tenant's manifest; raise ``ManifestError`` naming each bad field (or the
        bound of :func:`aktypes.boundedjson.check_json` the document breaks)."""
        try:
            check_json(data)
        except JSONBoundsError as exc:
            raise ManifestError([str(exc)]) from None
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise ManifestError(_pydantic_problems(exc)) from exc

    @classmethod
    def from_data(cls, data: Any) -> Manifest:
        try:
            return cls.model_validate(data, strict=False)
        except ValidationError as exc:
            raise ManifestError(_pydantic_problems(exc)) from exc


def _pydantic_problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        problems.append(f"{path.lstrip('.') or '(root)'}: {error['msg']}")
    return problems
