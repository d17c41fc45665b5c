"""A file the run config names that the run cannot use fails the run before any party is asked to spend.

A typo in ``test-data-path`` failed the run after every party had trained (their ε spent, no model saved); a
schema that could not be read came out as Flower's traceback.  Through the ServerApp's own entry, with a grid that
fails the test if any message is sent.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from edprf_core import example_schema
from server._run_control import RunFailed
from server.server_app import _run


class _NoRequests:
    def get_node_ids(self) -> list[int]:
        return [1, 2]

    def send_and_receive(self, messages, timeout=None):
        raise AssertionError("no request may be sent")

    def send(self, messages):
        raise AssertionError("no request may be sent")


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
    ],
)
def test_a_file_the_run_cannot_use_fails_it_before_any_request(tmp_path, caplog, given, said):
    (tmp_path / "header.csv").write_text("a,b\n1,2\n")  # no column of the schema
    config = _config(tmp_path, **{k: str(tmp_path / v) if isinstance(v, str) else v for k, v in given.items()})
    with caplog.at_level(logging.ERROR, logger="flwr"), pytest.raises(RunFailed, match="^" + said.format(d=tmp_path)):
        _run(_NoRequests(), SimpleNamespace(run_config=config, run_id=7))
    assert f"edprf run 7: failed before any request was sent: {said.format(d=tmp_path)}" in caplog.text
    assert not (tmp_path / "out").exists()  # not even claimed
