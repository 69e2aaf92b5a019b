"""An HTTP expose's proxy settings as ingress-nginx annotations (Akash's hostname operator).

Timeouts are given in milliseconds and become whole seconds, rounded up; an expose without
options (``max_body_size`` 0) gets Akash's defaults. The cluster's own Ingresses and the
hostname operator's both come from here, so a lease routes the same either way.

ingress-nginx copies these values into its configuration, so nothing a tenant wrote reaches
it unchecked, even from a manifest stored before the gateway checked it: next cases outside
Akash's set are left out, and every value must match :data:`SAFE_VALUE` (letters, digits,
``_``, ``.``, ``-`` and single spaces: no newline, brace, semicolon or quote) or the
annotation is left out, which gives ingress-nginx's own default.
"""

from __future__ import annotations

import re

from aktypes.manifest.models import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_NEXT_CASES,
    DEFAULT_NEXT_TRIES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    NEXT_CASES,
    NGINX_NEXT_CASES,
    HTTPOptions,
)

NGINX = "nginx.ingress.kubernetes.io"
DEFAULT_NEXT_TIMEOUT = 60_000  # what the hostname operator assumes for exposes without options
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.-]+( [A-Za-z0-9_.-]+)*")
_CASES = frozenset(NEXT_CASES + NGINX_NEXT_CASES)


def safe_annotations(annotations: dict[str, str]) -> dict[str, str]:
    """The annotations whose values ingress-nginx cannot read as configuration syntax."""
    return {key: value for key, value in annotations.items() if SAFE_VALUE.fullmatch(value)}


def _seconds(ms: int) -> str:
    return str(-(-ms // 1000))


def ingress_annotations(options: HTTPOptions) -> dict[str, str]:
    """ingress-nginx settings of an HTTP expose; Akash's defaults when it has none."""
    if options.max_body_size == 0:
        options = HTTPOptions(
            max_body_size=DEFAULT_MAX_BODY_SIZE,
            read_timeout=DEFAULT_READ_TIMEOUT,
            send_timeout=DEFAULT_SEND_TIMEOUT,
            next_tries=DEFAULT_NEXT_TRIES,
            next_timeout=DEFAULT_NEXT_TIMEOUT,
            next_cases=list(DEFAULT_NEXT_CASES),
            proxy_buffer_size=options.proxy_buffer_size,
        )
    cases = [
        f"http_{case}" if case[0] in "12345" else case
        for case in options.next_cases or ()
        if case in _CASES
    ]
    annotations = {
        f"{NGINX}/proxy-read-timeout": _seconds(options.read_timeout),
        f"{NGINX}/proxy-send-timeout": _seconds(options.send_timeout),
        f"{NGINX}/proxy-next-upstream-tries": str(options.next_tries),
        f"{NGINX}/proxy-body-size": str(options.max_body_size),
        f"{NGINX}/proxy-next-upstream-timeout": _seconds(options.next_timeout),
        f"{NGINX}/proxy-next-upstream": " ".join(cases),
    }
    if options.proxy_buffer_size:
        annotations[f"{NGINX}/proxy-buffer-size"] = str(options.proxy_buffer_size)
    return safe_annotations(annotations)
