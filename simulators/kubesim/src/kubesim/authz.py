"""Who is asking, and may they: bearer-token users and RBAC, as the real API server has them.

Off by default: without a users file every request is served, as it always was. With one
(``--users FILE``, ``KubeSim(users=...)``) each request is authenticated by its bearer
token — the kubeconfig's own token (``kubesim``) is ``kubernetes-admin`` of the group
``system:masters``, which may do anything; the file names the others; no token or an
unknown one is 401 ``Unauthorized`` — and then authorised by RBAC over the Roles,
ClusterRoles, RoleBindings and ClusterRoleBindings in the store, evaluated as
``plugin/pkg/auth/authorizer/rbac`` does: ClusterRoleBindings, then the RoleBindings of the
request's namespace; verbs, API groups, resources (``*``, ``pods/log``, ``*/status``),
resource names and non-resource URLs; subjects of kind User, Group and ServiceAccount
(``system:serviceaccount:<ns>:<name>``). A refusal is 403 with the real server's message:
``nodes is forbidden: User "x" cannot list resource "nodes" in API group "" at the cluster
scope``. Every authenticated user may read discovery, ``/version`` and the health probes,
and ask what it may do (``selfsubjectaccessreviews``…, ``kubesim.reviews``), as the
bootstrap roles ``system:discovery``, ``system:public-info-viewer`` and
``system:basic-user`` allow on a real cluster.

The users file::

    users:
      - {name: alice, token: alice-token, groups: [viewers]}
      - {name: "system:serviceaccount:akash-services:cluster", token: sa-token}
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kubesim import errors, kubeconfig
from kubesim.store import Store

ADMIN_TOKEN = kubeconfig.ADMIN_TOKEN  # what a kubeconfig kubesim writes carries by default
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
SA_PREFIX = "system:serviceaccount:"
RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = (RBAC, "clusterroles")
CLUSTER_ROLE_BINDINGS = (RBAC, "clusterrolebindings")
ROLES = (RBAC, "roles")
ROLE_BINDINGS = (RBAC, "rolebindings")
# what the bootstrap roles give every authenticated user (a real cluster's
# system:discovery, system:public-info-viewer and system:basic-user)
_PUBLIC_URLS = (
    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
    "/version", "/version/", "/openapi", "/openapi/*",
)  # fmt: skip
BASIC_RULES: tuple[dict[str, Any], ...] = (
    {"verbs": ["get"], "nonResourceURLs": list(_PUBLIC_URLS)},
    {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    },
    {
        "verbs": ["create"],
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"],
    },
)
ALL_RULES: tuple[dict[str, Any], ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch"}
_METHOD_VERBS["DELETE"] = "delete"


@dataclass(frozen=True)
class User:
    """An authenticated user: its name and the groups it is in (``system:authenticated``
    and a service account's groups are added, as the real authenticators add them)."""

    name: str
    groups: tuple[str, ...] = ()

    @property
    def all_groups(self) -> tuple[str, ...]:
        found = list(self.groups)
        if self.name.startswith(SA_PREFIX):
            namespace = self.name.removeprefix(SA_PREFIX).partition(":")[0]
            found += ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
        found.append(AUTHENTICATED)
        return tuple(dict.fromkeys(found))


ADMIN = User("kubernetes-admin", (MASTERS,))


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    token: str = Field(min_length=1)
    groups: tuple[str, ...] = ()

    @field_validator("token")
    @classmethod
    def _not_admin(cls, token: str) -> str:
        if token == ADMIN_TOKEN:
            raise ValueError(f"{ADMIN_TOKEN!r} is the admin's token (kubernetes-admin)")
        return token


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    users: tuple[_Entry, ...]


class Users:
    """Token → user; the admin token is always there."""

    def __init__(self, users: Mapping[str, User] | None = None) -> None:
        self._by_token = {ADMIN_TOKEN: ADMIN, **(users or {})}

    @classmethod
    def load(cls, path: Path) -> Users:
        """Read a users file; ValueError says, on one line, which file and what is wrong."""
        try:
            data = yaml.safe_load(path.read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read users file {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
        if not isinstance(data, dict) or not isinstance(data.get("users"), list):
            raise ValueError(f'{path}: expected a mapping with a "users:" list')
        try:
            entries = _File.model_validate(data).users
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            raise ValueError(f"{path}: {problems}") from None
        tokens = [e.token for e in entries]
        if len(set(tokens)) != len(tokens):
            raise ValueError(f"{path}: tokens must be unique")
        return cls({e.token: User(e.name, e.groups) for e in entries})

    def dump(self, path: Path) -> Path:
        """Write them as a users file (the admin left out: it is always there)."""
        users = [
            {"name": u.name, "token": t, "groups": list(u.groups)}
            for t, u in self._by_token.items()
            if t != ADMIN_TOKEN
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"users": users}, sort_keys=False))
        path.chmod(0o600)
        return path

    def authenticate(self, authorization: str | None) -> User:
        """The user of an ``Authorization: Bearer <token>`` header; 401 otherwise."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        user = self._by_token.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        return user


@dataclass(frozen=True)
class Attributes:
    """What a request asks, as ``k8s.io/apiserver``'s RequestInfo reads it off the path."""

    verb: str
    path: str = ""
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @classmethod
    def of_request(cls, method: str, path: str, query: Mapping[str, str]) -> Attributes:
        parts = [p for p in path.split("/") if p]
        verb = _METHOD_VERBS.get(method, method.lower())
        plain = cls(verb=method.lower(), path=path, resource_request=False)
        if len(parts) < 3 or parts[0] not in ("api", "apis"):
            return plain
        group = ""
        rest = parts[1:]
        if parts[0] == "apis":
            if len(rest) < 3:
                return plain
            group, rest = rest[0], rest[1:]
        version, rest = rest[0], rest[1:]
        namespace = ""
        if rest[0] == "namespaces" and len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in ("status", "finalize"):
                rest = rest[2:]
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        watching = query.get("watch", "0").lower() not in ("0", "false")
        if verb == "get" and (watching or not name):
            verb = "watch" if watching else "list"
        if verb == "delete" and not name:
            verb = "deletecollection"
        return cls(verb, path, True, group, version, resource, subresource, namespace, name)

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass
class Decision:
    allowed: bool
    reason: str = ""


@dataclass
class _Grant:
    """Where rules come from: a binding, its role and the subject that matched."""

    binding: str
    role_kind: str
    role: str
    subject: str
    rules: Sequence[dict[str, Any]] = field(default_factory=list)
    namespaced: bool = False

    def describe(self) -> str:
        kind = "RoleBinding" if self.namespaced else "ClusterRoleBinding"
        return f"{kind} {_q(self.binding)} of {self.role_kind} {_q(self.role)} to {self.subject}"


class Authorizer:
    """RBAC over the store's roles and bindings, read at each request."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def authorize(self, user: User, attrs: Attributes) -> Decision:
        if MASTERS in user.all_groups:
            return Decision(True)
        missing: list[str] = []
        for grant in self._grants(user, attrs.namespace, missing):
            if any(rule_allows(attrs, rule) for rule in grant.rules):
                return Decision(True, f"RBAC: allowed by {grant.describe()}")
        if not missing:
            return Decision(False)
        listed = missing[0] if len(missing) == 1 else f"[{', '.join(missing)}]"
        return Decision(False, f"RBAC: {listed}")

    def rules(self, user: User, namespace: str) -> list[dict[str, Any]]:
        """Every rule that applies to ``user`` in ``namespace`` (the rules review)."""
        if MASTERS in user.all_groups:
            return [dict(rule) for rule in ALL_RULES]
        return [dict(r) for grant in self._grants(user, namespace, []) for r in grant.rules]

    def _grants(self, user: User, namespace: str, missing: list[str]) -> Iterator[_Grant]:
        groups = user.all_groups
        basic = "system:basic-user"
        yield _Grant(basic, "ClusterRole", basic, f"Group {_q(AUTHENTICATED)}", BASIC_RULES)
        for binding in self.store.stored(CLUSTER_ROLE_BINDINGS):
            yield from self._granted(binding, user, groups, "", missing)
        if namespace:
            for binding in self.store.stored(ROLE_BINDINGS, namespace):
                yield from self._granted(binding, user, groups, namespace, missing)

    def _granted(
        self,
        binding: dict[str, Any],
        user: User,
        groups: tuple[str, ...],
        namespace: str,
        missing: list[str],
    ) -> Iterator[_Grant]:
        subject = _matching_subject(binding.get("subjects") or [], user, groups, namespace)
        if subject is None:
            return
        ref = binding.get("roleRef") or {}
        kind, name = ref.get("kind", ""), ref.get("name", "")
        if kind == "Role" and namespace:
            role = self.store.find(ROLES, namespace, name)
            qualified = "role.rbac.authorization.k8s.io"
        else:
            role = self.store.find(CLUSTER_ROLES, "", name)
            qualified = "clusterrole.rbac.authorization.k8s.io"
        if role is None:
            missing.append(f'{qualified} "{name}" not found')
            return
        meta = binding["metadata"]
        binding_name = f"{meta['name']}/{namespace}" if namespace else meta["name"]
        yield _Grant(binding_name, kind, name, subject, role.get("rules") or [], bool(namespace))


def _matching_subject(
    subjects: Sequence[dict[str, Any]], user: User, groups: tuple[str, ...], namespace: str
) -> str | None:
    """How the first subject that is ``user`` is described in a reason, else None."""
    for subject in subjects:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User" and name == user.name:
            return f"User {_q(name)}"
        if kind == "Group" and name in groups:
            return f"Group {_q(name)}"
        if kind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace and user.name == f"{SA_PREFIX}{sa_namespace}:{name}":
                return f"ServiceAccount {_q(f'{name}/{sa_namespace}')}"
    return None


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """``RuleAllows`` of the real RBAC authorizer."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    wanted = attrs.full_resource
    sub = attrs.subresource
    if not any(
        r in ("*", wanted) or (sub and r == f"*/{sub}") for r in rule.get("resources") or []
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def forbidden(user: User, attrs: Attributes, reason: str = "") -> errors.ApiError:
    """403 as ``responsewriters.Forbidden`` writes it."""
    if not attrs.resource_request:
        text = f"User {_q(user.name)} cannot {attrs.verb} path {_q(attrs.path)}"
    else:
        what = f"User {_q(user.name)} cannot {attrs.verb} resource {_q(attrs.full_resource)}"
        what += f" in API group {_q(attrs.group)}"
        where = f" in the namespace {_q(attrs.namespace)}" if attrs.namespace else ""
        text = what + (where or " at the cluster scope")
    if reason:
        text += f": {reason}"
    if not attrs.resource_request:
        return errors.ApiError(403, "Forbidden", f"forbidden: {text}", {})
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    named = f" {_q(attrs.name)}" if attrs.name else ""
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.group:
        details["group"] = attrs.group
    if attrs.name:
        details["name"] = attrs.name
    return errors.ApiError(403, "Forbidden", f"{qualified}{named} is forbidden: {text}", details)


def _q(text: str) -> str:
    """Go's ``%q``: a double-quoted string."""
    return json.dumps(text, ensure_ascii=False)
