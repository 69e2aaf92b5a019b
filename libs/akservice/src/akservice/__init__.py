"""What every provider service process shares: settings, logs, lifecycle, health.

A service declares a :class:`ServiceSpec` and an async ``start(rt)`` that wires it up on the
:class:`Runtime` it is handed; ``python -m <service>`` calls :func:`main`. See
:mod:`akservice.runtime` for the life of a process, :mod:`akservice.settings` for how
settings are named and composed, :mod:`akservice.testing` for the subprocess harness.
"""

from akservice.cli import main
from akservice.health import StartupError
from akservice.logs import bound
from akservice.runtime import Runtime, ServiceSpec
from akservice.settings import Config, Duration, SettingsError, load_config

__all__ = [
    "Config",
    "Duration",
    "Runtime",
    "ServiceSpec",
    "SettingsError",
    "StartupError",
    "bound",
    "load_config",
    "main",
]
