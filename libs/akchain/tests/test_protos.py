"""The committed *_pb2.py modules are what grpcio-tools makes of the committed .proto files."""

from __future__ import annotations

import importlib.resources
import shutil
import subprocess
import sys
from pathlib import Path

import grpc_tools

SRC = Path(__file__).parents[1] / "src"


def test_generated_modules_match_their_proto_files(tmp_path: Path) -> None:
    shutil.copytree(
        SRC / "akchain" / "_pb",
        tmp_path / "akchain" / "_pb",
        ignore=shutil.ignore_patterns("*_pb2.py*", "__pycache__"),
    )
    protos = sorted(
        str(p.relative_to(tmp_path)) for p in (tmp_path / "akchain" / "_pb").rglob("*.proto")
    )
    include = importlib.resources.files(grpc_tools) / "_proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            ".",
            "-I",
            str(include),
            "--python_out=.",
            "--pyi_out=.",
            *protos,
        ],
        cwd=tmp_path,
        check=True,
    )
    generated = sorted(tmp_path.rglob("*_pb2.py*"))
    assert len(generated) == 2 * len(protos)
    for path in generated:
        committed = SRC / path.relative_to(tmp_path)
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run scripts/gen-protos"
        )
