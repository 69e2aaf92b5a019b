"""``provider.yaml``: what a provider registers on chain, in the Go tools' format.

``provider-services tx provider create|update provider.yaml`` reads it with Go's ``yaml.v3``
into ``{host, info: {email, website}, attributes: [{key, value}]}``: other keys are ignored
(Akash's sample files carry ``jwt-host`` and ``capabilities``), scalars keep their source
text (``value: 5`` is the attribute value ``"5"``, an empty value is ``""``), a key given
twice is refused. The message is then checked as the chain checks it: an absolute
``https`` host URI without a path, attribute keys matching Akash's pattern, each once.

:func:`changes` lists what an update would change on chain (the attribute merge of a
capabilities sync is :func:`aktypes.capabilities.with_capabilities`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field
from yaml.nodes import Node

from aktypes.attributes import Attribute, validate_attributes
from aktypes.sdl.yamlnodes import Reader, YAMLSyntaxError, compose, join


class ProviderConfigError(ValueError):
    """``provider.yaml`` is unreadable or the chain would refuse it; the message says where."""


class ProviderConfig(BaseModel):
    """A provider's on-chain record: host URI, attributes, contact info."""

    model_config = ConfigDict(frozen=True)

    host: str
    attributes: list[Attribute] = Field(default_factory=list)
    email: str = ""
    website: str = ""

    def attribute_map(self) -> dict[str, str]:
        return {a.key: a.value for a in self.attributes}


def host_uri_problem(uri: str) -> str | None:
    """Why the chain refuses ``uri`` as a provider's host URI (Akash's checks), or ``None``."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError as exc:
        return f"host {uri!r} is not a URI ({exc})"
    if not parts.scheme:
        return f"host {uri!r} must be an absolute URI (https://host:port)"
    if parts.scheme != "https":
        return f"the scheme of host {uri!r} must be https"
    if not parts.hostname or (port is None and parts.netloc.endswith(":")):
        return f"host {uri!r} names no host"
    if parts.path:
        return f"host {uri!r} must have no path (https://host:port)"
    return None


def check(config: ProviderConfig) -> None:
    """Refuse what the chain's ``ValidateBasic`` of MsgCreate/UpdateProvider refuses."""
    problem = host_uri_problem(config.host) or validate_attributes(
        config.attributes, wildcard=False
    )
    if problem:
        raise ProviderConfigError(problem)


def _first_error(reader: Reader, source: str) -> ProviderConfigError:
    first = next(d for d in reader.diagnostics if d.is_error)
    return ProviderConfigError(f"{source}: {first}")


def _attributes(reader: Reader, node: Node, path: str) -> list[Attribute]:
    attributes: list[Attribute] = []
    for index, item in enumerate(reader.sequence(node, path) or ()):
        where = join(path, index)
        fields = {"key": "", "value": ""}
        for name, _key_node, value in reader.mapping(item, where) or ():
            if name in fields:
                fields[name] = reader.text(value, join(where, name)) or ""
        attributes.append(Attribute(key=fields["key"], value=fields["value"]))
    return attributes


def parse_provider_config(text: str, source: str = "provider.yaml") -> ProviderConfig:
    """Read ``provider.yaml`` as the Go tools do and check it as the chain does."""
    try:
        root, _notes = compose(text)
    except YAMLSyntaxError as exc:
        raise ProviderConfigError(f"{source}: {exc.diagnostic}") from None
    reader = Reader()
    values: dict[str, object] = {"host": "", "attributes": [], "email": "", "website": ""}
    for name, _key_node, node in (reader.mapping(root, "") if root is not None else []) or ():
        if name == "host":
            values["host"] = reader.text(node, "host") or ""
        elif name == "attributes":
            values["attributes"] = _attributes(reader, node, "attributes")
        elif name == "info":
            for field, _k, value in reader.mapping(node, "info") or ():
                if field in ("email", "website"):
                    values[field] = reader.text(value, join("info", field)) or ""
    if reader.has_errors:
        raise _first_error(reader, source)
    if not values["host"]:
        raise ProviderConfigError(f"{source}: host: the provider's host URI is missing")
    seen: set[str] = set()
    for attribute in values["attributes"]:  # type: ignore[attr-defined]
        if attribute.key in seen:
            raise ProviderConfigError(f"{source}: provider: duplicated attribute: {attribute.key}")
        seen.add(attribute.key)
    config = ProviderConfig.model_validate(values)
    try:
        check(config)
    except ProviderConfigError as exc:
        raise ProviderConfigError(f"{source}: {exc}") from None
    return config


@dataclass(frozen=True)
class Change:
    """One difference between the chain's record and the wanted one."""

    field: str  # "host", "attribute", "email" or "website"
    key: str  # the attribute's key ("" for the other fields)
    old: str | None  # None: added
    new: str | None  # None: removed

    def __str__(self) -> str:
        name = f"attribute {self.key}" if self.field == "attribute" else self.field
        if self.field != "attribute":
            name = {"email": "info.email", "website": "info.website"}.get(name, name)
        if self.old is None:
            return f"{name}: added {self.new!r}"
        if self.new is None:
            return f"{name}: removed (was {self.old!r})"
        return f"{name}: {self.old!r} -> {self.new!r}"


def changes(current: ProviderConfig | None, wanted: ProviderConfig) -> list[Change]:
    """What writing ``wanted`` changes on chain (attribute order aside); all of it when the
    provider is not registered (``current`` is ``None``)."""
    out: list[Change] = []
    for field in ("host", "email", "website"):
        old = getattr(current, field) if current is not None else None
        new = getattr(wanted, field)
        if old != new and (old is not None or new):
            out.append(Change(field, "", old, new))
    before = current.attribute_map() if current is not None else {}
    after = wanted.attribute_map()
    out.extend(
        Change("attribute", key, before.get(key), after.get(key))
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    )
    return out
