"""The GPU registry the operator uses: the bundled ``akoperators/gpus.yaml``, with the
operator's own file (``AP_INVENTORY_GPU_REGISTRY``) consulted first."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from akoperators.domain.gpus import GPURegistry, RegistryError
from akservice import StartupError

BUNDLED = "gpus.yaml"


def bundled() -> GPURegistry:
    text = resources.files("akoperators").joinpath(BUNDLED).read_text(encoding="utf-8")
    return GPURegistry.parse(yaml.safe_load(text), f"akoperators/{BUNDLED}")


def load(extra: Path | None) -> GPURegistry:
    """The registry; StartupError (one line naming the file) if ``extra`` cannot be used."""
    base = bundled()
    if extra is None:
        return base
    where = f"AP_INVENTORY_GPU_REGISTRY={extra}"
    try:
        data = yaml.safe_load(extra.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StartupError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark else ""
        raise StartupError(f"{where}: not valid YAML{at}") from None
    try:
        return GPURegistry.parse(data, str(extra)).over(base)
    except RegistryError as exc:
        raise StartupError(f"{where}: {exc}") from None
