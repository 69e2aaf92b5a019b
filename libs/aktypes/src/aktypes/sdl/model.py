"""The SDL as written: plain records filled by :mod:`aktypes.sdl.decode`.

Each record keeps the YAML path (and node) it came from so later checks can point at the
exact line. Values follow Akash's decoding: ``None`` stands for an absent list (Go's nil),
which the manifest writes as ``null``; an empty list stays ``[]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from yaml.nodes import Node

from aktypes.coin import DecCoin


@dataclass
class Located:
    path: str
    node: Node | None = field(default=None, repr=False, compare=False)


@dataclass
class HTTPOptionsIn(Located):
    max_body_size: int = 0
    proxy_buffer_size: int = 0
    read_timeout: int = 0
    send_timeout: int = 0
    next_tries: int = 0
    next_timeout: int = 0
    next_cases: list[str] | None = None


@dataclass
class ExposeToIn(Located):
    service: str = ""
    global_: bool = False
    ip: str = ""


@dataclass
class ExposeIn(Located):
    port: int = 0
    as_: int = 0
    proto: str = ""
    to: list[ExposeToIn] = field(default_factory=list)
    accept: list[str] | None = None
    http_options: HTTPOptionsIn | None = None


@dataclass
class StorageParamIn(Located):
    mount: str = ""
    read_only: bool = False


@dataclass
class ParamsIn(Located):
    storage: dict[str, StorageParamIn] = field(default_factory=dict)
    permissions: list[str] | None = None
    has_permissions: bool = False
    tee: str = ""


@dataclass
class CredentialsIn(Located):
    host: str = ""
    email: str = ""
    username: str = ""
    password: str = ""


@dataclass
class ServiceIn(Located):
    image: str = ""
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[str] | None = None
    expose: list[ExposeIn] = field(default_factory=list)
    params: ParamsIn | None = None
    credentials: CredentialsIn | None = None


@dataclass
class VolumeIn(Located):
    name: str = "default"
    size: int = 0
    attributes: list[tuple[str, str]] | None = None

    def attribute(self, key: str) -> str:
        return dict(self.attributes or ()).get(key, "")


@dataclass
class ComputeIn(Located):
    cpu: int | None = None
    cpu_attributes: list[tuple[str, str]] | None = None
    memory: int | None = None
    storage: list[VolumeIn] | None = None
    gpu: int | None = None  # None: no gpu block at all
    gpu_attributes: list[tuple[str, str]] | None = None


@dataclass
class PlacementIn(Located):
    attributes: list[tuple[str, str]] | None = None
    all_of: list[str] | None = None
    any_of: list[str] | None = None
    pricing: dict[str, DecCoin] = field(default_factory=dict)


@dataclass
class DeploymentIn(Located):
    profile: str = ""
    count: int = 0


@dataclass
class EndpointIn(Located):
    kind: str = ""


@dataclass
class SDLInput:
    """Everything an SDL declares, as written."""

    version: str
    services: dict[str, ServiceIn] = field(default_factory=dict)
    compute: dict[str, ComputeIn] = field(default_factory=dict)
    placement: dict[str, PlacementIn] = field(default_factory=dict)
    deployment: dict[str, dict[str, DeploymentIn]] = field(default_factory=dict)
    endpoints: dict[str, EndpointIn] = field(default_factory=dict)
    reclamation_seconds: float | None = None
