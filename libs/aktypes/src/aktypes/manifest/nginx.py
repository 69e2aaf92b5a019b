"""An HTTP expose's proxy settings as ingress-nginx annotations (Akash's hostname operator).

Timeouts are given in milliseconds and become whole seconds, rounded up; an expose without
options (``max_body_size`` 0) gets Akash's defaults. The cluster's own Ingresses and the
hostname operator's both come from here, so a lease routes the same either way.
"""

from __future__ import annotations

from aktypes.manifest.models import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_NEXT_CASES,
    DEFAULT_NEXT_TRIES,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    HTTPOptions,
)

NGINX = "nginx.ingress.kubernetes.io"
DEFAULT_NEXT_TIMEOUT = 60_000  # what the hostname operator assumes for exposes without options


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
        f"http_{case}" if case and case[0] in "12345" else case for case in options.next_cases or ()
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
    return annotations
