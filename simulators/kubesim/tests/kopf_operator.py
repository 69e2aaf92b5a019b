"""A small, ordinary kopf operator: nothing in it knows about kubesim.

A `Greeting` (greetings.demo.kubesim.test) gets a ConfigMap holding its message; changing the
message updates the ConfigMap; deleting the Greeting deletes the ConfigMap first (kopf holds
the Greeting with its finalizer until the delete handler has run). Status is written both
from handler results and with explicit status patches.

    KUBECONFIG=... python -m kopf run --standalone --all-namespaces kopf_operator.py
"""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "demo.kubesim.test", "v1", "greetings"


def _core() -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api()


@kopf.on.startup()
def configure(*, settings: kopf.OperatorSettings, **_: Any) -> None:
    kubernetes.config.load_kube_config()
    settings.watching.server_timeout = 10
    settings.watching.client_timeout = 15


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(
    *,
    body: kopf.Body,
    spec: kopf.Spec,
    name: str,
    namespace: str,
    patch: kopf.Patch,
    logger: Any,
    **_: Any,
) -> dict[str, Any]:
    child = {
        "metadata": {"name": f"{name}-greeting", "labels": {"greeting": name}},
        "data": {"message": spec.get("message", "")},
    }
    kopf.adopt(child, owner=body)
    _core().create_namespaced_config_map(namespace, child)
    logger.info("created the configmap of %s", name)
    kopf.info(body, reason="Greeted", message=f"configmap {name}-greeting holds the message")
    patch.status["phase"] = "Greeted"
    return {"configmap": f"{name}-greeting"}


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.message")
def update_fn(new: Any, name: str, namespace: str, patch: kopf.Patch, **_: Any) -> dict[str, Any]:
    _core().patch_namespaced_config_map(
        f"{name}-greeting", namespace, {"data": {"message": new or ""}}
    )
    patch.status["phase"] = "Updated"
    return {"message": new}


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_fn(*, name: str, namespace: str, logger: Any, **_: Any) -> None:
    try:
        _core().delete_namespaced_config_map(f"{name}-greeting", namespace)
    except kubernetes.client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
    logger.info("deleted the configmap of %s", name)
