"""Settings of a service process: its own ``AP_*`` group, the runtime's, ``REDIS_*``, ``AKBUS_*``.

Every group is a pydantic-settings class read from the environment once, in ``__main__``,
and passed down as one :class:`Config`. Problems come back as one line per variable, named
as the operator typed it (``AP_TX_BROADCAST_TIMEOUT="fast": not a duration …``), never as a
pydantic dump.

Naming rule, for one environment shared by every service (a ``.env`` file, ``akash-provider
run``, a systemd unit): ``REDIS_*`` and ``AKBUS_*`` configure the bus of every process
alike; a setting whose value must differ between services carries the service's name
(``AP_CHAIN_HEALTH_LISTEN``, ``AP_BIDENGINE_HEALTH_LISTEN``); every other ``AP_*`` name means
one thing in every service that reads it (Akash's names, such as ``AP_NODE`` or
``AP_BID_TIMEOUT``, keep Akash's meaning). :func:`conflicts` finds two services declaring
one name with another type or default; a test runs it over every service.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic import create_model as _create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as _SourceError

from akbus import BusSettings, RedisSettings
from aktypes.duration import Duration, format_duration, parse_duration

S = TypeVar("S", bound=BaseSettings)
__all__ = ["Config", "Duration", "RuntimeSettings", "SettingsError", "load_config"]


_LISTEN = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]*):(\d{1,5})$")


class SettingsError(Exception):
    """Settings that cannot be used: one line per problem, each naming its variable."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


def listen_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8091``, ``:8091`` for every address) as (host, port)."""
    match = _LISTEN.match(value.strip())
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ValueError(f"{value!r} is not host:port (example: 0.0.0.0:8091)")
    return match.group(1).strip("[]") or "0.0.0.0", int(match.group(2))  # noqa: S104


class RuntimeSettings(BaseSettings):
    """What the runtime needs of every service (see :func:`runtime_settings`)."""

    model_config = SettingsConfigDict(env_prefix="AP_", extra="ignore")

    health_listen: str = Field(
        default="0.0.0.0:8090",
        description="address of /healthz, /readyz and /metrics",
    )
    instance_id: str = Field(
        default="0",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="tells apart processes of one service on one host (in the consumer name)",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="least severe log level written"
    )
    log_format: Literal["auto", "json", "text"] = Field(
        default="auto", description="auto: text on a terminal, JSON lines otherwise"
    )
    log_rate: float = Field(
        default=50.0,
        ge=0,
        description="lines a second each logger writes of one message (more are counted "
        "and dropped); 0: no limit",
    )

    @field_validator("health_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        listen_address(value)
        return value

    def listen(self) -> tuple[str, int]:
        return listen_address(self.health_listen)


def runtime_settings(service: str, health_listen: str) -> type[RuntimeSettings]:
    """The runtime settings of ``service``: ``AP_<SERVICE>_HEALTH_LISTEN`` and the shared rest."""
    variable = f"AP_{service.upper()}_HEALTH_LISTEN"
    model: type[RuntimeSettings] = _create_model(
        f"{service.title()}RuntimeSettings",
        __base__=RuntimeSettings,
        health_listen=(
            str,
            Field(
                default=health_listen,
                validation_alias=AliasChoices(variable),
                description=f"address of {service}'s /healthz, /readyz and /metrics",
            ),
        ),
    )
    return model


@dataclass(frozen=True)
class Config(Generic[S]):
    """Everything a service process is configured with, built once at start."""

    service: S
    runtime: RuntimeSettings
    redis: RedisSettings
    bus: BusSettings


def load_config(
    service: type[S], runtime: type[RuntimeSettings], *, bus: dict[str, Any] | None = None
) -> Config[S]:
    """Read every group from the environment; :class:`SettingsError` lists all problems.

    ``bus`` holds the service's own defaults for ``AKBUS_*`` settings (overridden by the
    environment), e.g. a smaller concurrency for a serial pipeline.
    """
    problems: list[str] = []
    built: dict[type[BaseSettings], Any] = {}
    for cls in (service, runtime, RedisSettings, BusSettings):
        try:
            built[cls] = cls()
        except (ValidationError, _SourceError) as exc:
            problems.extend(describe_error(cls, exc))
    if problems:
        raise SettingsError(problems)
    bus_settings: BusSettings = built[BusSettings]
    if bus:
        given = {name for name in BusSettings.model_fields if _env_value(BusSettings, name)}
        bus_settings = bus_settings.model_copy(
            update={k: v for k, v in bus.items() if k not in given}
        )
    return Config(built[service], built[runtime], built[RedisSettings], bus_settings)


# -- names --------------------------------------------------------------------------------


def env_name(cls: type[BaseSettings], field: str) -> str:
    """The environment variable that sets ``field`` of ``cls``."""
    alias = cls.model_fields[field].validation_alias
    if isinstance(alias, str):
        return alias.upper()
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        if isinstance(first, str):
            return first.upper()
    prefix = str(cls.model_config.get("env_prefix") or "")
    return f"{prefix}{field}".upper()


def _env_value(cls: type[BaseSettings], field: str) -> str | None:
    wanted = env_name(cls, field)
    for key, value in os.environ.items():
        if key.upper() == wanted:
            return value
    return None


def _secret(info: FieldInfo) -> bool:
    return "SecretStr" in repr(info.annotation)


def describe_error(cls: type[BaseSettings], exc: Exception) -> list[str]:
    """One line per problem of ``exc``, naming the variable and what was given."""
    if not isinstance(exc, ValidationError):  # a value the source could not even decode
        return [f"settings: {exc}"]
    lines = []
    by_alias = {env_name(cls, name): name for name in cls.model_fields}
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else ""
        field = by_alias.get(field.upper(), field)
        if field not in cls.model_fields:
            lines.append(f"settings: {message}")
            continue
        name = env_name(cls, field)
        given = _env_value(cls, field)
        if given is None or _secret(cls.model_fields[field]):
            lines.append(f"{name}: {message}")
        else:
            lines.append(f"{name}={given!r}: {message}")
    return lines


# -- --help ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    description: str
    annotation: str


def settings_of(cls: type[BaseSettings]) -> list[Setting]:
    """Every variable ``cls`` reads, with its default and description."""
    found = []
    for field, info in cls.model_fields.items():
        if info.default is not PydanticUndefined:
            default = _show(info.default, duration=_is_duration(info))
        elif info.default_factory is not None:
            default = "(computed)"
        else:
            default = "(required)"
        found.append(
            Setting(env_name(cls, field), default, info.description or "", repr(info.annotation))
        )
    return found


def _is_duration(info: FieldInfo) -> bool:
    return any(getattr(m, "func", None) is parse_duration for m in info.metadata)


def _show(value: object, *, duration: bool = False) -> str:
    if duration and isinstance(value, int | float):
        return format_duration(value)
    if value is None:
        return "(unset)"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, str):
        return value or '""'
    return str(value)


def settings_help(groups: Iterable[tuple[str, type[BaseSettings]]]) -> str:
    """The settings part of ``--help``: each group's variables, defaults and meanings."""
    out = []
    for title, cls in groups:
        out.append(f"{title}:")
        out.extend(
            f"  {item.name:<34} {item.default:<24} {item.description}".rstrip()
            for item in settings_of(cls)
        )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def conflicts(services: Iterable[tuple[str, type[BaseSettings]]]) -> list[str]:
    """Names two services declare with a different type or default."""
    seen: dict[str, tuple[str, Setting]] = {}
    problems = []
    for service, cls in services:
        for item in settings_of(cls):
            earlier = seen.setdefault(item.name, (service, item))
            other, declared = earlier
            if other != service and (declared.default, declared.annotation) != (
                item.default,
                item.annotation,
            ):
                problems.append(
                    f"{item.name} is {declared.annotation} = {declared.default} in {other} "
                    f"but {item.annotation} = {item.default} in {service}"
                )
    return problems
