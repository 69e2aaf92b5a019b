"""The pure parts of the gateway's limits: which body limit a route has, the tenants'
websocket slots, and the access lines' redaction (the processes' behaviour is tested in
``tests/test_gateway_tenant.py``)."""

from __future__ import annotations

import pytest

from akgateway.adapters.server import redacted
from akgateway.api.limits import InputRate, TenantSlots, route_limit
from akgateway.errors import TooManyRequests


def test_the_manifest_route_has_its_own_limit() -> None:
    limit = route_limit(4096, 1024)
    assert limit("PUT", "/deployment/42/manifest") == 4096
    assert limit("POST", "/deployment/42/manifest") == 1024
    assert limit("PUT", "/deployment/42/manifest/x") == 1024
    assert limit("POST", "/hostname/migrate") == 1024


def test_slots_count_per_tenant_and_come_back() -> None:
    slots = TenantSlots(websockets=3, shells=2)
    held = [slots.take("a", "shell"), slots.take("a", "shell")]
    with pytest.raises(TooManyRequests, match="2 shells"):
        slots.take("a", "shell")
    held.append(slots.take("a", "logs"))
    with pytest.raises(TooManyRequests, match="3 websockets"):
        slots.take("a", "events")
    give_back = slots.take("b", "shell")  # another tenant has slots of its own
    for release in held:
        release()
        release()  # twice changes nothing
    give_back()
    assert not slots.held
    slots.take("a", "shell")


def test_shell_input_is_paced_per_tenant_after_a_second_of_burst() -> None:
    paced = InputRate(64 * 1024)
    assert [paced.charge("a", 16 * 1024, 0.0) for _ in range(4)] == [0, 0, 0, 0]  # the burst
    assert paced.charge("a", 32 * 1024, 0.0) == pytest.approx(0.5)  # half a second ahead
    assert paced.charge("b", 64 * 1024, 0.0) == 0  # another tenant has a rate of its own
    assert paced.charge("a", 1, 2.0) == 0  # paid up by then
    many = [paced.charge("a", 1, 3.0) for _ in range(128)]  # tiny frames count as 1 KiB each
    assert many[63] == 0 and many[-1] == pytest.approx(1.0)
    assert InputRate(0).charge("a", 1 << 30, 0.0) == 0  # no pacing


def test_access_lines_keep_the_query_names_only() -> None:
    assert redacted("/?token=secret") == "/?token=***"
    assert redacted("/lease/1/1/1/shell?cmd0=cat&cmd1=%2Fetc&tty=0") == (
        "/lease/1/1/1/shell?cmd0=***&cmd1=***&tty=***"
    )
    assert redacted("/status") == "/status"
