"""``python -m <service>``: ``--help`` (every setting), ``--version``, or run the service.

    # akchainsvc/__main__.py
    from akchainsvc.service import SPEC
    from akservice import main
    main(SPEC)

Exit codes: 0 stopped by a signal; 1 the service failed (one log line says why); 2 the
settings or the command line are wrong (one line per problem, naming the variable).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pydantic_settings import BaseSettings

from akbus import BusSettings, RedisSettings
from akservice import logs
from akservice.runtime import Runtime, ServiceSpec, version_of
from akservice.settings import SettingsError, load_config, settings_help


def parser(spec: ServiceSpec[Any]) -> argparse.ArgumentParser:
    prog = f"python -m {spec.module or spec.distribution}"
    groups: list[tuple[str, type[BaseSettings]]] = [
        (f"{spec.title} (AP_*)", spec.settings),
        ("process", spec.runtime_settings),
        ("Redis (REDIS_*; REDIS_URL empty: the embedded server)", RedisSettings),
        ("bus (AKBUS_*)", BusSettings),
    ]
    epilog = (
        "Settings come from the environment (defaults shown; durations such as 30s, 5m or "
        "1h30m):\n\n" + settings_help(groups)
    )
    argp = argparse.ArgumentParser(
        prog=prog,
        description=f"{spec.title}: {spec.summary}",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    argp.add_argument(
        "--version", action="version", version=f"{prog} {version_of(spec.distribution)}"
    )
    return argp


def main(spec: ServiceSpec[Any], argv: Sequence[str] | None = None) -> NoReturn:
    """Parse the command line and the environment, then run ``spec`` until it stops."""
    parser(spec).parse_args(argv)
    try:
        config = load_config(spec.settings, spec.runtime_settings, bus=spec.bus_defaults)
    except SettingsError as exc:
        for problem in exc.problems:
            print(f"{spec.distribution}: {problem}", file=sys.stderr)  # noqa: T201
        sys.exit(2)
    logs.setup(
        spec.name,
        level=config.runtime.log_level,
        fmt=config.runtime.log_format,
        rate=config.runtime.log_rate,
    )
    try:
        code = asyncio.run(Runtime(spec, config).run())
    except KeyboardInterrupt:  # a signal before the loop could take it over
        code = 0
    sys.exit(code)
