"""No first-party module over 600 lines (docs/architecture.md): one concept per module.

The modules are those of every package's ``src/`` — libraries, services, simulators and the
command line — but for the generated protobuf code under ``_pb/``. Benchmarks and tests are
not packages and are not counted.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]
SOURCES = ("libs/*/src", "services/*/src", "simulators/*/src", "cli/src")
MAX_LINES = 600


def modules(root: Path) -> list[Path]:
    """Every first-party module under ``root``, generated code left out."""
    found = [
        path
        for pattern in SOURCES
        for src in root.glob(pattern)
        for path in src.rglob("*.py")
        if "_pb" not in path.relative_to(src).parts
    ]
    return sorted(found)


def oversized(root: Path) -> list[tuple[str, int]]:
    """Each module over :data:`MAX_LINES` lines, with its path from ``root`` and its length."""
    lengths = ((path, len(path.read_text(encoding="utf-8").splitlines())) for path in modules(root))
    return [(str(path.relative_to(root)), n) for path, n in lengths if n > MAX_LINES]


def test_the_modules_of_every_kind_of_package_are_read() -> None:
    found = {path.relative_to(ROOT).parts[0] for path in modules(ROOT)}
    assert found == {"libs", "services", "simulators", "cli"}
    assert len(modules(ROOT)) >= 200


def test_no_module_is_over_600_lines() -> None:
    found = oversized(ROOT)
    assert found == [], f"modules over {MAX_LINES} lines (split them by responsibility):\n" + (
        "\n".join(f"{path}: {n} lines" for path, n in found)
    )


def test_a_long_module_is_named_and_generated_code_and_tests_are_not(tmp_path: Path) -> None:
    def write(relative: str, lines: int) -> None:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines)

    write("libs/aklib/src/aklib/long.py", MAX_LINES + 1)
    write("libs/aklib/src/aklib/limit.py", MAX_LINES)
    write("services/svc/src/aksvc/handlers/deep.py", MAX_LINES + 50)
    write("services/svc/src/aksvc/_pb/generated_pb2.py", 5000)
    write("simulators/sim/src/aksim/__init__.py", 3)
    write("cli/src/akcli/main.py", MAX_LINES + 2)
    write("libs/aklib/tests/test_long.py", 5000)
    write("bench/long.py", 5000)

    assert oversized(tmp_path) == [
        ("cli/src/akcli/main.py", MAX_LINES + 2),
        ("libs/aklib/src/aklib/long.py", MAX_LINES + 1),
        ("services/svc/src/aksvc/handlers/deep.py", MAX_LINES + 50),
    ]
