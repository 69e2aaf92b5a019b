"""Validation of objects on write: the schema first, then the rules the real server adds.

Objects arrive here decoded (`kubesim.decoding`: well-typed, unknown fields dropped).
Built-in kinds are checked against the OpenAPI schema of the configured Kubernetes version
(required fields, enums), then by the semantic checks the API server makes in Go that no
schema expresses — a container needs an image, a Deployment's selector must match
its template, names must be DNS names, service ports must be in range. Custom resources are
checked against their CRD's `openAPIV3Schema` (see `kubesim.crd`). Every problem becomes a
`cause` naming the field, and the request is refused with 422, as Kubernetes does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from kubesim import schemas
from kubesim.catalog import ResourceType
from kubesim.selectors import match_label_selector

Cause = tuple[str, str, str]  # (field, reason, message)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# kinds whose names are DNS labels rather than subdomains
_LABEL_NAMED = {"Namespace", "Service"}
# kinds whose names may be any path segment
_PATH_NAMED = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Event"}
_ANNOTATIONS_SIZE = 256 * 1024
_WORKLOADS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"}


def is_dns_label(name: Any) -> bool:
    """A lowercase RFC 1123 label (namespaces, services, container names)."""
    return isinstance(name, str) and len(name) <= 63 and bool(_DNS_LABEL.match(name))


def is_dns_subdomain(name: Any) -> bool:
    """A lowercase RFC 1123 subdomain (most object names, node names)."""
    return isinstance(name, str) and len(name) <= 253 and bool(_DNS_SUBDOMAIN.match(name))


def field_path(parts: Iterator[Any] | list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def required(field: str) -> Cause:
    return (field, "FieldValueRequired", "Required value")


def invalid_value(field: str, value: Any, why: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return (field, "FieldValueInvalid", f"Invalid value: {shown}: {why}")


def schema_causes(validator: jsonschema.Validator, obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        path = list(error.absolute_path)
        if error.validator == "required":
            missing = re.match(r"'([^']+)'", error.message)
            name = missing.group(1) if missing else "?"
            causes.append(required(field_path([*path, name])))
        elif error.validator in ("additionalProperties", "unevaluatedProperties"):
            extra = re.findall(r"'([^']+)'", error.message)
            for name in extra or ["?"]:
                field = field_path([*path, name])
                causes.append((field, "FieldValueInvalid", f'unknown field "{field}"'))
        else:
            field = field_path(path)
            why = (
                error.message.split(" is not ", 1)[-1]
                if " is not " in error.message
                else error.message
            )
            causes.append(invalid_value(field, error.instance, why))
        if len(causes) >= 20:
            break
    return causes


def check_builtin(rtype: ResourceType, obj: dict[str, Any], version: str) -> list[Cause]:
    causes = check_metadata(rtype, obj)
    checker = schemas.validator(rtype.kind, rtype.api_version, version)
    if checker is not None:
        causes += schema_causes(checker, obj)
    causes += _semantic(rtype.kind, obj)
    return causes


def check_metadata(rtype: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        causes.append(required("metadata.name"))
    elif rtype.kind in _LABEL_NAMED:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            causes.append(
                invalid_value(
                    "metadata.name",
                    name,
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or '-', and must start and end with an alphanumeric character",
                )
            )
    elif rtype.kind in _PATH_NAMED:
        if "/" in name or "%" in name or name in (".", ".."):
            causes.append(invalid_value("metadata.name", name, "may not contain '/' or '%'"))
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        causes.append(
            invalid_value(
                "metadata.name",
                name,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
            )
        )
    causes += label_causes(meta.get("labels") or {})
    annotations = meta.get("annotations") or {}
    for key in annotations:
        prefix, _, part = key.rpartition("/")
        if (
            (prefix and not is_dns_subdomain(prefix))
            or len(part) > 63
            or not _LABEL_NAME.match(part)
        ):
            causes.append(
                invalid_value(
                    "metadata.annotations",
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                    "must start and end with an alphanumeric character (at most 63 of them)",
                )
            )
    if sum(len(k) + len(v) for k, v in annotations.items()) > _ANNOTATIONS_SIZE:
        causes.append(
            (
                "metadata.annotations",
                "FieldValueTooLong",
                f"Too long: must have at most {_ANNOTATIONS_SIZE} bytes",
            )
        )
    return causes


def label_causes(labels: dict[str, Any], at: str = "metadata.labels") -> list[Cause]:
    """What is wrong with a set of labels: keys are qualified names, values label values."""
    causes: list[Cause] = []
    for key, value in labels.items():
        prefix, _, label = key.rpartition("/")
        if (
            (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))
            or len(label) > 63
            or not _LABEL_NAME.match(label)
        ):
            causes.append(
                invalid_value(
                    at,
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                    "must start and end with an alphanumeric character (at most 63 of them)",
                )
            )
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                invalid_value(
                    at,
                    value,
                    "a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character (at most 63 of them)",
                )
            )
    return causes


def _semantic(kind: str, obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    if kind == "Pod":
        causes += _pod_spec(spec, "spec")
    elif kind in _WORKLOADS:
        causes += _workload(spec)
    elif kind == "Job":
        causes += _pod_spec((spec.get("template") or {}).get("spec") or {}, "spec.template.spec")
    elif kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        causes += _pod_spec(template.get("spec") or {}, "spec.jobTemplate.spec.template.spec")
    elif kind == "Service":
        causes += _service(spec)
    elif kind == "Ingress":
        causes += _ingress(spec)
    elif kind == "PersistentVolumeClaim":
        if not spec.get("accessModes"):
            causes.append(required("spec.accessModes"))
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            causes.append(required("spec.resources[storage]"))
    return causes


def _workload(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    selector = spec.get("selector")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(required("spec.selector"))
    elif not match_label_selector(selector, labels):
        causes.append(
            invalid_value(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(
            invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
        )
    causes += _pod_spec(template.get("spec") or {}, "spec.template.spec")
    return causes


def _pod_spec(spec: dict[str, Any], at: str) -> list[Cause]:
    causes: list[Cause] = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(required(f"{at}.containers"))
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            where = f"{at}.{field}[{i}]"
            name = container.get("name")
            if not name:
                causes.append(required(f"{where}.name"))
            elif not _DNS_LABEL.match(name) or len(name) > 63:
                causes.append(
                    invalid_value(
                        f"{where}.name",
                        name,
                        "a lowercase RFC 1123 label must consist of lower case "
                        "alphanumeric characters or '-'",
                    )
                )
            elif name in names:
                causes.append(
                    (f"{where}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"')
                )
            if name:
                names.add(name)
            if not container.get("image"):
                causes.append(required(f"{where}.image"))
            for j, port in enumerate(container.get("ports") or []):
                number = port.get("containerPort")
                if isinstance(number, int) and not 1 <= number <= 65535:
                    causes.append(
                        invalid_value(
                            f"{where}.ports[{j}].containerPort",
                            number,
                            "must be between 1 and 65535, inclusive",
                        )
                    )
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name")
        if name in volumes:
            causes.append(
                (f"{at}.volumes[{i}].name", "FieldValueDuplicate", f'Duplicate value: "{name}"')
            )
        volumes.add(name)
    return causes


def _ingress(spec: dict[str, Any]) -> list[Cause]:
    """A rule's host is a DNS subdomain (a leading ``*.`` allowed); a backend names a
    Service by a DNS label and a port by a number in 1-65535 or a name."""
    causes: list[Cause] = []
    backends: list[tuple[str, dict[str, Any]]] = []
    if spec.get("defaultBackend"):
        backends.append(("spec.defaultBackend", spec["defaultBackend"]))
    for i, rule in enumerate(spec.get("rules") or []):
        host = rule.get("host")
        if host and not is_dns_subdomain(str(host).removeprefix("*.")):
            causes.append(
                invalid_value(
                    f"spec.rules[{i}].host", host, "a lowercase RFC 1123 subdomain must consist "
                    "of lower case alphanumeric characters, '-' or '.'",
                )
            )  # fmt: skip
        for j, path in enumerate(((rule.get("http") or {}).get("paths")) or []):
            backends.append((f"spec.rules[{i}].http.paths[{j}].backend", path.get("backend") or {}))
    for at, backend in backends:
        service = backend.get("service")
        if service is None:
            continue
        if not is_dns_label(service.get("name")):
            causes.append(
                invalid_value(
                    f"{at}.service.name", service.get("name"), "a DNS-1035 label must consist "
                    "of lower case alphanumeric characters or '-'",
                )
            )  # fmt: skip
        number = (service.get("port") or {}).get("number")
        if isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(
                invalid_value(
                    f"{at}.service.port.number", number, "must be between 1 and 65535, inclusive"
                )
            )
    return causes


def _service(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    kind = spec.get("type", "ClusterIP")
    if kind not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        causes.append(("spec.type", "FieldValueNotSupported", f'Unsupported value: "{kind}"'))
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(required("spec.ports"))
    seen: set[tuple[int, str]] = set()
    for i, port in enumerate(ports):
        number = port.get("port")
        if isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(
                invalid_value(
                    f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"
                )
            )
        key = (number, port.get("protocol", "TCP"))
        if key in seen:
            causes.append(
                (f"spec.ports[{i}]", "FieldValueDuplicate", f"Duplicate value: {number}/{key[1]}")
            )
        seen.add(key)
        node_port = port.get("nodePort")
        if node_port and not 30000 <= node_port <= 32767:
            causes.append(
                invalid_value(
                    f"spec.ports[{i}].nodePort",
                    node_port,
                    "provided port is not in the valid range. "
                    "The range of valid ports is 30000-32767",
                )
            )
        if len(ports) > 1 and not port.get("name"):
            causes.append(required(f"spec.ports[{i}].name"))
    return causes
