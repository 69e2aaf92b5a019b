"""What a service's pods may read and pull: RBAC for its read permissions, registry secret.

A service whose SDL lists ``params.permissions.read`` (``logs``, ``events``) gets a
ServiceAccount, a Role with Akash's rules for those resources and a RoleBinding, all named
after the service; its pods mount that account's token (no other pod does). Registry
credentials become the ``kubernetes.io/dockerconfigjson`` Secret ``docker-creds-<svc>``,
encoded byte for byte as the Go provider encodes it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from akcluster.domain.objects.base import (
    MANIFEST_SERVICE,
    Obj,
    lease_labels,
    metadata,
    namespace_of,
)
from akcluster.domain.objects.workloads import credentials_secret_name, read_permissions
from aktypes.ids import LeaseID
from aktypes.manifest import Service

RBAC_GROUP = "rbac.authorization.k8s.io"

# what a service's ``params.permissions.read`` entries let its pods read (Akash's registry)
READ_RULES: Mapping[str, tuple[Obj, ...]] = {
    "logs": (
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
    ),
    "events": ({"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},),
}


def _rbac_labels(lease_id: LeaseID, service: Service) -> dict[str, str]:
    return lease_labels(lease_id) | {MANIFEST_SERVICE: service.name}


def rbac_objects(service: Service, lease_id: LeaseID) -> list[Obj]:
    """ServiceAccount, Role and RoleBinding letting the pods read what the SDL permits."""
    read = read_permissions(service)
    if not read:
        return []
    ns, name = namespace_of(lease_id), service.name
    labels = _rbac_labels(lease_id, service)
    rules = [rule for resource in dict.fromkeys(read) for rule in READ_RULES.get(resource, ())]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, labels, ns)},
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "Role",
            "metadata": metadata(name, dict(labels), ns),
            "rules": rules,
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": metadata(name, dict(labels), ns),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        },
    ]


def _go_json(data: object) -> bytes:
    """``json.Marshal``'s bytes: compact, fields in order, ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text.encode()


def credentials_secret(service: Service, lease_id: LeaseID) -> Obj | None:
    """The service's registry credentials as a ``kubernetes.io/dockerconfigjson`` Secret."""
    creds = service.credentials
    if creds is None:
        return None
    username, password = creds.username.strip(), creds.password.strip()
    entry = {
        "username": username,
        "password": password,
        "email": creds.email.strip(),
        "auth": base64.b64encode(f"{username}:{password}".encode()).decode(),
    }
    config = {"auths": {creds.host: {k: v for k, v in entry.items() if v}}}
    labels = lease_labels(lease_id) | {MANIFEST_SERVICE: service.name}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(credentials_secret_name(service), labels, namespace_of(lease_id)),
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(_go_json(config)).decode()},
    }
