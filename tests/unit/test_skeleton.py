"""docs/architecture.md's service skeleton matches the tree: every service package has every
part of the skeleton or its row says it does not, and everything else it holds is named in
its row of the table."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
SECTION = DOC.split("## Service skeleton", 1)[1].split("\n## ", 1)[0]
BOILERPLATE = {"__init__.py", "__main__.py", "py.typed", "testing.py", "__pycache__"}


def rows(header: str) -> dict[str, str]:
    """The rows of the table whose header starts with ``header``: first cell → the rest."""
    table = SECTION.split(header, 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in table.splitlines()[2:]:
        first, rest = line.strip("|").split("|", 1)
        found[first.strip().strip("`")] = rest
    return found


def names(text: str) -> set[str]:
    """The files and folders a cell names: ``x.py``, ``x.yaml`` and ``x/``, without the slash."""
    return {n.rstrip("/") for n in re.findall(r"`(\w[\w.]*(?:\.\w+|/))`", text)}


def absent(text: str) -> set[str]:
    """What a cell says the package does not have: "no `a`, `b` and `c`"."""
    return {
        n for said in re.findall(r"\bno ((?:`[^`]+`(?:, | and )?)+)", text) for n in names(said)
    }


PARTS = {name for part in rows("| part |") for name in names(f"`{part}`")}
PACKAGES = rows("| package |")


def folder(package: str) -> Path:
    top, *rest = package.split(".")
    [found] = [p for p in (ROOT / "services").glob(f"*/src/{top}") if p.is_dir()]
    return found.joinpath(*rest)


def test_the_skeleton_has_its_seven_parts() -> None:
    assert {
        "service.py", "settings.py", "handlers.py", "domain", "adapters", "errors.py", "metrics.py"
    } == PARTS  # fmt: skip


def test_every_service_package_has_a_row() -> None:
    services = {p.name for p in (ROOT / "services").glob("*/src/*") if (p / "__init__.py").exists()}
    assert services == {package.split(".")[0] for package in PACKAGES}
    for package in PACKAGES:
        assert folder(package).is_dir(), package


def test_each_package_holds_the_skeleton_and_what_its_row_names() -> None:
    for package, row in PACKAGES.items():
        entries = {p.name for p in folder(package).iterdir()} - BOILERPLATE
        subpackages = {p for p in PACKAGES if p.startswith(f"{package}.")}
        entries -= {p.rsplit(".", 1)[1] for p in subpackages}
        missing, said = PARTS - entries, absent(row)
        assert missing == said & PARTS, f"{package}: lacks {missing}, its row says {said}"
        extra, named = entries - PARTS, names(row) - said - PARTS
        assert extra == named, f"{package}: holds {extra}, its row names {named}"
