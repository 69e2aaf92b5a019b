"""No import cycles in any first-party package (docs/architecture.md).

A cycle is a module that imports, directly or through others, a module that imports it
back. Every import counts: at the top of a module, inside a function (deferring an import
hides a cycle, it does not remove it) and under ``TYPE_CHECKING``. The imports are read from
the source files with grimp, as import-linter reads them; nothing is imported or run.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = sorted(
    init.parent.name
    for pattern in (
        "libs/*/src/*/__init__.py",
        "services/*/src/*/__init__.py",
        "simulators/*/src/*/__init__.py",
        "cli/src/*/__init__.py",
    )
    for init in ROOT.glob(pattern)
)


def cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Each cycle of modules once, from its first module in sorted order."""
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:  # importer -> imported -> ... -> importer
                cycle = back[-1:] + back[:-1]
                start = cycle.index(min(cycle))
                found.add(cycle[start:] + cycle[:start])
    return sorted(found)


def test_the_packages_of_the_repository_are_all_read() -> None:
    assert {"aktypes", "akbus", "akservice", "akcluster", "akgateway", "akcli"} <= set(PACKAGES)
    assert len(PACKAGES) >= 15


def test_no_package_has_an_import_cycle() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join((*c, c[0])) for c in found)


def test_a_cycle_through_a_function_or_type_checking_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "cyclesample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclesample import b\n")
    (package / "b.py").write_text("def later() -> None:\n    from cyclesample import a\n")
    (package / "c.py").write_text("from cyclesample.d import D\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclesample.c import C\n"
    )
    (package / "e.py").write_text("from cyclesample import a\n")  # imports a cycle, is in none
    monkeypatch.syspath_prepend(str(tmp_path))

    graph = grimp.build_graph("cyclesample", cache_dir=None)

    assert cycles(graph) == [
        ("cyclesample.a", "cyclesample.b"),
        ("cyclesample.c", "cyclesample.d"),
    ]
