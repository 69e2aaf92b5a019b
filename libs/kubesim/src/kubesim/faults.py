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

    def apply(self, body: dict[str, Any]) -> None:
        """The HTTP form: {"unavailable": {"seconds": S, "refuse": bool}} | {"available": true}
        | {"slow": {"delay": D, "seconds": S}} | {"crashloop": {"namespace": N, "selector": L}}
        | {"heal": true} | {"node": {"name": N, "ready": bool}}."""
        if "unavailable" in body:
            spec = body["unavailable"]
            self.unavailable(float(spec["seconds"]), refuse=bool(spec.get("refuse", False)))
        if body.get("available"):
            self.available()
        if "slow" in body:
            self.slow(float(body["slow"]["delay"]), float(body["slow"].get("seconds", 3600)))
        if "crashloop" in body:
            self.crashloop(body["crashloop"]["namespace"], body["crashloop"]["selector"])
        if body.get("heal"):
            self.heal()
        if "node" in body:
            self.node_ready(body["node"]["name"], bool(body["node"]["ready"]))
