"""A file the run config names that the run cannot use fails the run before any party is asked to spend.

A typo in ``test-data-path`` failed the run after every party had trained (their ε spent, no model saved); a
schema that could not be read came out as Flower's traceback.  Through the ServerApp's own entry, with a grid that
fails the test if any message is sent.
"""

from __future__ import annotations

import gzip
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from edprf_core import example_schema, load_embedded
from server._run_control import RunFailed
from server.server_app import _run


class _NoRequests:
    def get_node_ids(self) -> list[int]:
        return [1, 2]

    def send_and_receive(self, messages, timeout=None):
        raise AssertionError("no request may be sent")

    def send(self, messages):
        raise AssertionError("no request may be sent")


def _wall_rows(tmp_path: Path) -> tuple[Path, list[str]]:
    """A test file of the wall robot schema (header and 300 rows) and its lines."""
    X, y, _ = load_embedded("wall_robot_navigation")
    path = tmp_path / "wall.csv"
    X.iloc[:300].assign(Class=y.iloc[:300].to_numpy()).to_csv(path, index=False)
    return path, path.read_text().splitlines()


def test_a_usable_test_file_passes_and_the_run_goes_on_to_the_parties(tmp_path):
    """The check reads a good file as the run will, and lets the run go on: here to waiting for a third party."""
    path, _ = _wall_rows(tmp_path)
    config = _config(tmp_path, **{"test-data-path": str(path), "min-parties": 3, "node-wait-timeout": 0.1})
    with pytest.raises(RunFailed) as failed:
        _run(_NoRequests(), SimpleNamespace(run_config=config, run_id=8))
    assert "test-data-path" not in str(failed.value) and "min-parties" in str(failed.value), failed.value


def _config(tmp_path: Path, **given: object) -> dict:
    example_schema("wall_robot_navigation").save(tmp_path / "schema.toml")
    return {
        "schema-path": str(tmp_path / "schema.toml"),
        "output-dir": str(tmp_path / "out"),
        "min-parties": 2,
        **given,
    }


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"test-data-path": "typo.csv"}, "test-data-path: data file {d}/typo.csv does not exist"),
        (
            {"validation-data-path": "header.csv", "selective-aggregation": True},
            "validation-data-path: {d}/header.csv:",
        ),
        ({"schema-path": "none.toml"}, "schema-path: cannot read schema file {d}/none.toml"),
        ({"keys-dir": "keys"}, "keys-dir: {d}/keys is not a directory"),
        ({"validation-data-path": "no-rows.csv"}, "validation-data-path: {d}/no-rows.csv: no row the schema accepts"),
        ({"test-data-path": "undeclared.csv"}, "test-data-path: {d}/undeclared.csv: no row the schema accepts"),
        ({"test-data-path": "cut.csv.gz"}, "test-data-path: "),
    ],
)
def test_a_file_the_run_cannot_use_fails_it_before_any_request(tmp_path, caplog, given, said):
    (tmp_path / "header.csv").write_text("a,b\n1,2\n")  # no column of the schema
    _, rows = _wall_rows(tmp_path)
    (tmp_path / "no-rows.csv").write_text(rows[0] + "\n")  # the header alone (review S2: passed a header check)
    undeclared = [",".join([*r.split(",")[:-1], "Unknown-Class"]) for r in rows[1:6]]
    (tmp_path / "undeclared.csv").write_text("\n".join([rows[0], *undeclared]) + "\n")  # no declared label
    whole = gzip.compress(("\n".join(rows) + "\n").encode())
    (tmp_path / "cut.csv.gz").write_bytes(whole[: len(whole) // 2])  # a gzip stream cut after its header
    config = _config(tmp_path, **{k: str(tmp_path / v) if isinstance(v, str) else v for k, v in given.items()})
    with caplog.at_level(logging.ERROR, logger="flwr"), pytest.raises(RunFailed, match="^" + said.format(d=tmp_path)):
        _run(_NoRequests(), SimpleNamespace(run_config=config, run_id=7))
    assert f"edprf run 7: failed before any request was sent: {said.format(d=tmp_path)}" in caplog.text
    assert not (tmp_path / "out").exists()  # not even claimed


def test_the_run_uses_the_rows_read_before_any_request(tmp_path, caplog):
    """Stop-55 re-review S3-1 and S3-2: the run read its files again after the parties had spent (a file rewritten
    in between, by a nightly export say, could still fail the run), and logged each refused row's rule twice.  The
    check returns the accepted rows, the run uses them, and each rule a row breaks is logged once."""
    from server import CoordinatorConfig
    from server._run_files import check_run_files

    path, rows = _wall_rows(tmp_path)
    broken = rows[1].split(",")
    broken[0] = "not-a-number"
    path.write_text("\n".join([rows[0], ",".join(broken), *rows[2:]]) + "\n")
    schema_path = _config(tmp_path)["schema-path"]
    cfg = CoordinatorConfig(schema_path=schema_path, output_dir=str(tmp_path / "out"), test_data_path=str(path))
    with caplog.at_level(logging.WARNING, logger="edprf.coordinator"):
        files = check_run_files(cfg)
    X, y = files.test
    assert len(X) == len(y) == len(rows) - 2 and files.validation is None
    assert len([r for r in caplog.records if "those rows are left out" in r.getMessage()]) == 1


def test_the_coordinator_reads_no_data_file_after_the_check():
    """A regression guard for the above: the run's code after the check takes its rows from ``RunFiles``."""
    import inspect

    import server._coordinator as coordinator

    assert "read_csv" not in inspect.getsource(coordinator) and "read_table" not in inspect.getsource(coordinator)


def test_a_claim_the_file_system_cannot_lock_fails_the_run_before_any_request(tmp_path, caplog, monkeypatch):
    """Stop-56 review E6: the output-dir claim is an flock; a mount that refuses locks (ENOLCK) raised a bare
    OSError through the ServerApp instead of failing the run with its reason, before any request."""
    import errno

    import server._run_control as run_control

    def no_locks(*_args):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(run_control.fcntl, "flock", no_locks)
    _wall_rows(tmp_path)
    config = _config(tmp_path)
    with caplog.at_level(logging.ERROR, logger="flwr"), pytest.raises(RunFailed, match="No locks available"):
        _run(_NoRequests(), SimpleNamespace(run_config=config, run_id=7))
    assert "edprf run 7: failed before any request was sent: [Errno 37] No locks available" in caplog.text
