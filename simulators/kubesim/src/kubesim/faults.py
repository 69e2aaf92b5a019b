"""Fault switches, for tests of what clients do when the cluster misbehaves.

- the API is unavailable for a while: every request answered 503, or connections refused;
- the API is slow: every request delayed;
- a workload's pods crash-loop (`CrashLoopBackOff`, restarts counting up, never ready);
- a node turns NotReady (its pods lose readiness; nothing new is scheduled on it).

Switches are set in-process (`sim.faults.crashloop(...)`) or over HTTP on the server command
(`POST /_kubesim/faults`, see `apply`), and each can be switched off again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kubesim.selectors import label_matcher


@dataclass
class Faults:
    unavailable_until: float = 0.0
    refuse: bool = False  # refuse connections instead of answering 503
    slow_until: float = 0.0
    slow_delay: float = 0.0
    crashloops: list[tuple[str, str]] = field(default_factory=list)  # (namespace, label selector)
    not_ready: set[str] = field(default_factory=set)
    on_change: list[Callable[[], None]] = field(default_factory=list)

    def _changed(self) -> None:
        for callback in self.on_change:
            callback()

    def unavailable(self, seconds: float, *, refuse: bool = False) -> None:
        """Answer every API request with 503 (or refuse connections) for `seconds`."""
        self.unavailable_until = time.monotonic() + seconds
        self.refuse = refuse
        self._changed()

    def available(self) -> None:
        self.unavailable_until = 0.0
        self._changed()

    def is_unavailable(self) -> bool:
        return time.monotonic() < self.unavailable_until

    def slow(self, delay: float, seconds: float = 3600.0) -> None:
        """Delay every API request by `delay` seconds, for `seconds`."""
        self.slow_delay = delay
        self.slow_until = time.monotonic() + seconds

    def delay(self) -> float:
        return self.slow_delay if time.monotonic() < self.slow_until else 0.0

    def crashloop(self, namespace: str, selector: str) -> None:
        """Pods in `namespace` matching the label `selector` crash-loop from now on."""
        self.crashloops.append((namespace, selector))
        self._changed()

    def heal(self) -> None:
        """Stop every crash loop."""
        self.crashloops.clear()
        self._changed()

    def crashlooping(self, pod: dict[str, Any]) -> bool:
        namespace = pod["metadata"].get("namespace")
        return any(ns == namespace and label_matcher(sel)(pod) for ns, sel in self.crashloops)

    def node_ready(self, name: str, ready: bool) -> None:
        """Turn a node NotReady (`ready=False`) or Ready again."""
        if ready:
            self.not_ready.discard(name)
        else:
            self.not_ready.add(name)
        self._changed()

    def apply(self, body: Any) -> None:
        """The HTTP form, one or more switches at once (see `FaultSwitches`); ValueError says
        what is wrong with a request, and nothing is switched then."""
        try:
            switches = FaultSwitches.model_validate(body)
            if switches.crashloop is not None:
                label_matcher(switches.crashloop.selector)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"bad fault switches: {problems}") from None
        if switches.unavailable is not None:
            self.unavailable(switches.unavailable.seconds, refuse=switches.unavailable.refuse)
        if switches.available:
            self.available()
        if switches.slow is not None:
            self.slow(switches.slow.delay, switches.slow.seconds)
        if switches.crashloop is not None:
            self.crashloop(switches.crashloop.namespace, switches.crashloop.selector)
        if switches.heal:
            self.heal()
        if switches.node is not None:
            self.node_ready(switches.node.name, switches.node.ready)


class _Switch(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Unavailable(_Switch):
    seconds: float = Field(gt=0)
    refuse: bool = False


class _Slow(_Switch):
    delay: float = Field(ge=0)
    seconds: float = Field(3600.0, gt=0)


class _Crashloop(_Switch):
    namespace: str = Field(min_length=1)
    selector: str


class _Node(_Switch):
    name: str = Field(min_length=1)
    ready: bool


class FaultSwitches(_Switch):
    """`POST /_kubesim/faults` body, e.g. {"unavailable": {"seconds": 2, "refuse": true}},
    {"available": true}, {"slow": {"delay": 0.5, "seconds": 10}},
    {"crashloop": {"namespace": "ns", "selector": "app=web"}}, {"heal": true},
    {"node": {"name": "node-a", "ready": false}}."""

    unavailable: _Unavailable | None = None
    available: bool = False
    slow: _Slow | None = None
    crashloop: _Crashloop | None = None
    heal: bool = False
    node: _Node | None = None
