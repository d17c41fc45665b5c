"""The committed release_pb2.py matches release.proto."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from protocol import regenerate

needs_protoc = pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None,
    reason="grpc_tools is not installed (pip install 'grpcio-tools<1.82', the dev extra)",
)


@needs_protoc
def test_committed_module_is_fresh(tmp_path):
    fresh = regenerate.generate_into(tmp_path)
    assert fresh.is_file()
    assert not regenerate.is_stale(fresh), "protocol/release_pb2.py is stale: run python -m protocol.regenerate"


@needs_protoc
def test_staleness_is_detected(tmp_path):
    fresh = regenerate.generate_into(tmp_path)
    committed = tmp_path / "committed_pb2.py"
    committed.write_text(fresh.read_text().replace("manifest_json", "manifest_jsn"))
    assert regenerate.is_stale(fresh, committed)
    version_only = tmp_path / "version_only_pb2.py"
    version_only.write_text(fresh.read_text().replace("# Protobuf Python Version: ", "# Protobuf Python Version: 0."))
    assert not regenerate.is_stale(fresh, version_only)


@needs_protoc
def test_check_command(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "protocol.regenerate", "--check"],
        capture_output=True,
        text=True,
        check=False,
        cwd=regenerate.REPO_ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout


def test_generated_module_describes_the_proto():
    from protocol import release_pb2 as pb

    assert pb.DESCRIPTOR.package == "edprf.v1"
    assert pb.DESCRIPTOR.name == "protocol/release.proto"
    assert set(pb.DESCRIPTOR.message_types_by_name) == {
        "TrainingParameters",
        "Trees",
        "Marginals",
        "Release",
        "SignedRelease",
        "GlobalModel",
    }
