"""A service's restarts and last termination, read from its pods' container statuses."""

from __future__ import annotations

from typing import Any

from akcluster.adapters.kube_rules import restarts
from aktypes.events import Termination


def pod(service: str, *containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> Any:
    return {
        "metadata": {"labels": {"akash.network/manifest-service": service}},
        "status": {"containerStatuses": list(containers), "initContainerStatuses": list(init)},
    }


def ended(count: int, reason: str, code: int, at: str) -> dict[str, Any]:
    terminated = {"reason": reason, "exitCode": code, "finishedAt": at}
    return {"restartCount": count, "lastState": {"terminated": terminated}}


def test_restarts_add_up_per_service_and_the_latest_termination_wins() -> None:
    found = restarts(
        [
            pod("web", ended(2, "Error", 1, "2026-11-27T10:00:00Z"), {"restartCount": 0}),
            pod("web", ended(3, "OOMKilled", 137, "2026-11-27T10:05:00Z")),
            pod("db", {"restartCount": 0, "lastState": {}}, init=({"restartCount": 1},)),
            pod("", ended(9, "Error", 2, "2026-11-27T11:00:00Z")),  # no service: not ours
            {"metadata": {"labels": {"akash.network/manifest-service": "new"}}},  # no status
        ]
    )
    assert set(found) == {"web", "db", "new"}
    assert found["web"].restarts == 5
    assert found["web"].last_termination == Termination(
        reason="OOMKilled", exit_code=137, finished_at="2026-11-27T10:05:00Z"
    )
    assert (found["db"].restarts, found["db"].last_termination) == (1, None)
    assert (found["new"].restarts, found["new"].last_termination) == (0, None)
