"""The confirmation rule of the reconciliation sweeps: two sweeps in a row, grace apart."""

from __future__ import annotations

from aktypes.reconcile import Sightings


def test_a_finding_is_confirmed_on_the_second_sweep_once_the_grace_has_passed() -> None:
    sightings: Sightings[str] = Sightings(grace=10.0)
    assert sightings.confirm(["a", "b"], now=100.0) == []  # first sighting: never
    assert sightings.confirm(["a", "b"], now=105.0) == []  # within the grace
    assert sightings.confirm(["b", "a", "c"], now=110.0) == ["b", "a"]  # c is new
    assert sightings.confirm(["c"], now=125.0) == ["c"]


def test_a_sweep_without_the_finding_forgets_it() -> None:
    sightings: Sightings[str] = Sightings(grace=0.0)
    sightings.confirm(["a"], now=1.0)
    assert sightings.confirm([], now=2.0) == []
    assert sightings.confirm(["a"], now=3.0) == []  # seen again: a first sighting again
    assert sightings.confirm(["a", "a"], now=4.0) == ["a"]
