"""The example GPU registry (docker-compose's) is what the suite makes of the example nodes."""

from __future__ import annotations

from pathlib import Path

import yaml

from akcli.testing import gpu_registry
from kubesim.cluster import ClusterSpec

EXAMPLES = Path(__file__).parents[2] / "simulators" / "kubesim" / "examples"


def test_the_example_registry_names_the_example_nodes_gpus() -> None:
    made = yaml.safe_load(gpu_registry(ClusterSpec.load(EXAMPLES / "nodes.yaml")))
    assert made == yaml.safe_load((EXAMPLES / "gpus.yaml").read_text())
    assert [(g["model"], g["memory"], g["interface"]) for g in made["gpus"]] == [
        ("a100", "80Gi", "sxm")
    ]
