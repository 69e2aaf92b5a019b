"""The operators as subprocesses for tests: ``python -m akoperators.<kind>`` on a free port."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from akservice.testing import RuntimeProcess

KINDS = ("inventory", "hostname", "ip")


class OperatorProcess(RuntimeProcess):
    """One operator (``inventory``, ``hostname`` or ``ip``) on a cluster's kubeconfig."""

    def __init__(
        self,
        kind: str,
        *,
        redis_url: str,
        log_path: Path,
        kubeconfig: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"no {kind!r} operator (known: {', '.join(KINDS)})")
        self.kind = kind
        super().__init__(
            f"akoperators.{kind}",
            kind,
            redis_url=redis_url,
            log_path=log_path,
            env={
                "AP_KUBECONFIG": str(kubeconfig),
                # kubesim was not onboarded: no akash-services namespace unless a test made it
                "AP_LEADER_ELECTION_NAMESPACE": "default",
                **(env or {}),
            },
            name=f"{kind}-operator",
        )
