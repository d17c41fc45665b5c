"""A run stopped while a SuperNode pulls its message leaves a blocked ``flwr-clientapp`` (Flower 1.41); the
launcher's stop ends it.

Flower 1.41's SuperNode creates the task (which its SuperExec turns into a ``flwr-clientapp`` at once) before
it pulls the message's objects; when the run is stopped during that pull, the SuperLink answers 403, the
SuperNode logs ``Run ID ... is not in `RUNNING` status. Ignoring message ...`` and leaves the task and the
half-stored message in place (``flwr/supernode/start_client_internal.py``, ``_pull_and_store_message``).  The
``flwr-clientapp`` then waits for objects that never come (``pull_objects``: up to 500 tries per object, 10 s
apart), and outlives a SIGTERM to its SuperNode (deploy/README.md section 10).  A throwaway app sends one
large message so that the pull lasts long enough for ``flwr stop`` to land inside it; no party code is
involved (the blocked process never loads the app).

Checked: the symptom as a hospital saw it (the log line, a ``flwr-clientapp`` still running after the stop,
in the SuperNode's process group), then :meth:`Deployment.stop` ends it well within its grace period.
If a later Flower fixes the SuperNode, the first check fails: update deploy/README.md section 10.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ._harness import GRACE, REPO, Federation, command_line, json_result, proc_stat, process_tree, run_guarded

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

MEGABYTES = 250  # the SuperNode's pull of it lasts several seconds on loopback: `flwr stop` starts within that

PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "bigmessage"
version = "0.1.0"
license = { file = "LICENSE" }
dependencies = ["flwr"]

[tool.flwr.app]
publisher = "edprf-tests"

[tool.flwr.app.components]
serverapp = "bigmessage.server:app"
clientapp = "bigmessage.client:app"

[tool.flwr.app.config]
megabytes = 1
"""

SERVER = """import time

import numpy as np
from flwr.app import ArrayRecord, Message, RecordDict
from flwr.serverapp import ServerApp

app = ServerApp()


@app.main()
def main(grid, context):
    while not (nodes := list(grid.get_node_ids())):
        time.sleep(1)
    # random bytes: Flower sends each distinct 5 MB chunk once (equal chunks would make the pull short)
    data = np.frombuffer(np.random.default_rng(0).bytes(int(context.run_config["megabytes"]) * 1024 * 1024), np.uint8)
    messages = [Message(RecordDict({"a": ArrayRecord([data])}), dst_node_id=n, message_type="train") for n in nodes]
    list(grid.send_and_receive(messages, timeout=600))
"""

CLIENT = """from flwr.app import Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

app = ClientApp()


@app.train()
def train(msg, context):
    return Message(RecordDict({"m": MetricRecord({"ok": 1})}), reply_to=msg)
"""


def _write_app(root: Path) -> Path:
    app = root / "bigmessage-app"
    (app / "bigmessage").mkdir(parents=True)
    (app / "pyproject.toml").write_text(PYPROJECT)
    (app / "LICENSE").write_text((REPO / "LICENSE").read_text())
    (app / "bigmessage" / "__init__.py").write_text("")
    (app / "bigmessage" / "server.py").write_text(SERVER)
    (app / "bigmessage" / "client.py").write_text(CLIENT)
    return app


def _wait_log(path: Path, *needles: str, timeout: float) -> str:
    """The first of ``needles`` that appears in the log at ``path`` (polled every 20 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        for needle in needles:
            if needle in text:
                return needle
        time.sleep(0.02)
    raise AssertionError(f"none of {needles} in {path.name} after {timeout:g} s")


def test_a_clientapp_left_blocked_by_a_stopped_run_is_ended_by_the_stop(deployment, tmp_path):
    dep = deployment
    app = _write_app(tmp_path)

    def scenario() -> None:
        fed = Federation(dep)
        fed.start_superlink(tmp_path / "superlink.db")
        fed.write_cli_config()
        supernode = fed.start_supernode("party", "x=1")
        fed.wait_online(1)
        code, out = fed.flwr(
            "submit",
            ["run", str(app), fed.connection, "--run-config", f"megabytes={MEGABYTES}", "--format", "json"],
            timeout=120,
        )
        run_id = json_result(code, out, "flwr run")["run-id"]
        _wait_log(supernode.log_path, "Receiving: train message", timeout=120)
        code, out = fed.flwr("stop", ["stop", str(run_id), fed.connection], timeout=60)
        assert code == 0, out
        seen = _wait_log(
            supernode.log_path, "is not in `RUNNING` status. Ignoring message", "Received successfully", timeout=60
        )
        if seen == "Received successfully":
            pytest.skip("`flwr stop` came after the SuperNode had pulled the whole message (a slower start)")

        time.sleep(8)  # a ClientApp of a finished task is gone by now
        blocked = [
            (pid, start)
            for pid, start in process_tree([supernode.popen.pid]).items()
            if "flwr-clientapp" in command_line(pid)
        ]
        assert blocked, "no flwr-clientapp left running: has Flower fixed this? update deploy/README.md section 10"

        started = time.monotonic()
        dep.stop()
        took = time.monotonic() - started
        assert took < GRACE, f"the stop took {took:.1f} s: the blocked ClientApp was killed only after the grace"
        for pid, start in blocked:
            stat = proc_stat(pid)
            assert stat is None or stat[1] != start, f"flwr-clientapp {pid} still running after the stop"

    run_guarded(dep, scenario)
