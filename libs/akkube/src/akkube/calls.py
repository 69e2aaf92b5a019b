"""Requests by path through the official client's ``ApiClient`` (its kubeconfig, TLS and
token handling), for any resource, CRDs included.

Answers are JSON, never the generated models: those cost their parsing (a list of ten
thousand pods) and some ninety megabytes of modules for the few calls made. Every function
here blocks; callers run them on worker threads and translate the errors at their own
boundary (the client's :class:`ApiException`, urllib3's errors for no answer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

Obj = dict[str, Any]
Query = Sequence[tuple[str, Any]]


def resource_path(
    api_version: str, plural: str, namespace: str | None = None, name: str | None = None
) -> str:
    """``/api/v1/namespaces/ns/services/name``, ``/apis/networking.k8s.io/v1/ingresses``…"""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    return f"{base}/{name}" if name else base


class Answer(NamedTuple):
    """An answer read whole: its status, reason and body."""

    status: int
    reason: str
    data: bytes


def send(
    client: ApiClient,
    method: str,
    path: str,
    *,
    query: Query = (),
    body: Any = None,
    content_type: str = "application/json",
    timeout: Any = None,
) -> Answer:
    """One request, its answer read whole whatever its status; :class:`ApiException` only
    for the client's own refusals, urllib3's errors when there is no answer."""
    headers = {"Accept": "application/json", "Content-Type": content_type}
    request = client.param_serialize(
        method,
        path,
        query_params=list(query),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    response = client.call_api(*request, _request_timeout=timeout)
    data: bytes = response.read()  # type: ignore[no-untyped-call]
    return Answer(response.status, response.reason or "", data)


def target(client: ApiClient, path: str, query: Query = ()) -> tuple[str, dict[str, str]]:
    """The URL and headers (with the credentials) of a GET of ``path``: for a request the
    official client cannot make (a websocket)."""
    _, url, headers, _, _ = client.param_serialize(
        "GET",
        path,
        query_params=list(query),
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    return url, headers


def open_get(client: ApiClient, path: str, query: Query = (), timeout: Any = None) -> Any:
    """GET ``path``, the response (urllib3's) not read yet, for a stream or a large list;
    :class:`ApiException` for an answer other than 2xx."""
    url, headers = target(client, path, query)
    answer = client.call_api("GET", url, headers, _request_timeout=timeout)
    if not 200 <= answer.status <= 299:
        answer.read()  # type: ignore[no-untyped-call]
        raise ApiException(http_resp=answer)
    return answer.response


def get_json(client: ApiClient, path: str, query: Query = (), timeout: Any = None) -> Obj:
    """GET ``path`` as JSON; :class:`ApiException` for an answer other than 2xx."""
    response = open_get(client, path, query, timeout)
    try:
        found: Obj = json.loads(response.data)
    finally:
        response.release_conn()
    return found
