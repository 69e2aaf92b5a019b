"""A kubeconfig for a kubesim server, usable by the official clients, kopf and kubectl.

The token is the admin's (``kubesim``) unless another is given: with users
(``kubesim.authz``) a kubeconfig per user is how a test acts as that user. An https
server's CA goes in as ``certificate-authority-data`` (``kubesim.tls``).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

CONTEXT = "kubesim"


ADMIN_TOKEN = "kubesim"  # noqa: S105 - a simulator's well-known admin token


def render(
    server: str,
    namespace: str = "default",
    *,
    token: str = ADMIN_TOKEN,
    ca_pem: bytes | None = None,
) -> str:
    cluster = {"server": server}
    if ca_pem is not None:  # an https server (kubesim.tls)
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write(
    path: Path, server: str, *, token: str = ADMIN_TOKEN, ca_pem: bytes | None = None
) -> Path:
    """Write a kubeconfig (0600) for ``server`` as the user of ``token``, whole or not at
    all: it is written beside ``path`` and renamed, so a reader that finds the file (a
    client, a test waiting for the server) never reads it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(render(server, token=token, ca_pem=ca_pem))
    os.replace(partial, path)
    return path
