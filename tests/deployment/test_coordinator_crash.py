"""The coordinator's host dies mid-run and comes back.

1. ``test_coordinator_killed_mid_run_and_restarted``: TLS, SuperNode authentication and a separate
   SuperExec, as in deploy/compose.yaml.  A run is submitted; as soon as every party's ledger
   holds its reservation for that run (the parties are training, or have just sent their
   releases), the SuperLink, the SuperExec and the ServerApp are killed together with SIGKILL.
   Then:
   - the output directory holds no model (or a complete one) and no temporary file;
   - the SuperLink restarts on its database; the SuperNodes reconnect by themselves;
   - the killed run is not resumed: Flower lists it as ``running`` until an operator stops it
     (``flwr stop RUN_ID``), and no ServerApp ever collects its releases;
   - the parties' reservations for the killed run stay counted (sequential composition: those
     releases left the party, or may have), once each;
   - a new run trains again under new request ids: each party's ledger has one entry per request
     id, the killed run's ε plus the new run's, nothing counted twice;
   - the killed run's training, resumed by its request tag, completes with the parties' stored
     releases and spends nothing.
2. ``test_a_killed_model_writer_leaves_a_complete_model_or_none``: the atomic write of the global
   model under SIGKILL at random moments: the model path always holds a complete model; what a
   kill can leave is a hidden ``.global-model.edprf.*.tmp`` file, never a file at a model's name.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from edprf_fl.cli._main import main
from protocol import load_global_model
from server._run_control import CLAIM_NAME

from ._harness import (
    Federation,
    bundle_hash,
    command_line,
    json_result,
    node_config,
    process_tree,
    run_guarded,
    write_parties,
)
from .conftest import ledger_rows

pytestmark = [pytest.mark.deployment, pytest.mark.slow]

PARTIES = {"hospital-a": 5.0, "hospital-b": 5.0}
MODEL = "global-model.edprf"


def _runs(fed: Federation, field: str = "status") -> dict[str, str]:
    code, out = fed.flwr("flwr-ls", ["ls", fed.connection, "--format", "json"])
    runs = json_result(code, out, "flwr ls")["runs"]
    return {r["run-id"]: r[field] for r in runs}


def _assert_no_partial_model(out_dir, killed_run: str | None = None) -> None:
    """No temporary file and no incomplete model in ``out_dir``; the claim of ``killed_run`` may be left (its
    process is gone: the next run there takes it over)."""
    if not out_dir.exists():
        return
    names = sorted(p.name for p in out_dir.iterdir())
    assert [n for n in names if n.endswith(".tmp")] == [], f"temporary files left in {out_dir}: {names}"
    if (out_dir / MODEL).exists():
        load_global_model(out_dir / MODEL)  # complete, or this raises
    if killed_run is not None and (out_dir / CLAIM_NAME).exists():
        assert json.loads((out_dir / CLAIM_NAME).read_text())["run"] == killed_run
        names.remove(CLAIM_NAME)
    assert set(names) <= {MODEL, "report.json"}, names


def test_coordinator_killed_mid_run_and_restarted(deployment, pki, tmp_path, capsys):
    dep = deployment

    def scenario() -> None:
        parties, schema = write_parties(tmp_path / "parties", PARTIES, release_epsilon=1.0, evaluation_epsilon=0.1)
        keys = {p: pki.party(p) for p in PARTIES}
        fed = Federation(dep, tls=pki.tls, supernode_auth=True, separate_superexec=True)
        database = tmp_path / "superlink.db"
        fed.start_superlink(database)
        fed.write_cli_config()
        for p in PARTIES:
            fed.register(keys[p].auth_pub)
        for p, paths in parties.items():
            fed.start_supernode(p, node_config(paths, signing_key=keys[p].signing_key), auth_key=keys[p].auth_key)
        fed.wait_online(len(PARTIES))
        fed.assert_loopback_only()
        run_config = {
            "schema-path": schema,
            "epsilon": 1.0,
            "n-trees": 2,
            "max-depth": 4,
            "min-parties": 2,
            "expected-parties": 2,
            "evaluation-epsilon": 0.1,
            "round-timeout": 120.0,
            "keys-dir": pki.keys_dir(PARTIES),
            "evaluation-max-interval-width": 1.0,
        }

        # ---- submit, wait for every party's reservation, kill the coordinator's processes at once
        out_killed = tmp_path / "out-killed"
        bundle_hashes = {bundle_hash()}
        code, output = fed.run("run-killed", run_config, out_killed, stream=False)
        bundle_hashes.add(bundle_hash())  # (someone may edit the repository meanwhile)
        assert code == 0, output
        killed_run = re.search(r"Successfully started run (\d+)", output).group(1)
        at_kill: dict[str, list] = {}

        def reserved() -> bool:
            at_kill.update(
                {p: [r for r in ledger_rows(paths["ledger"]) if r[4] == killed_run] for p, paths in parties.items()}
            )
            return all(at_kill.values())

        dep.wait_until("every party's reservation for the run", reserved, timeout=90.0, interval=0.05)
        superexec = next(p for p in dep.started if p.role == "superexec")
        coordinator = process_tree([fed.superlink.popen.pid, superexec.popen.pid])
        assert any("flwr-serverapp" in command_line(pid) for pid in coordinator), "no ServerApp was running"
        for proc in (fed.superlink, superexec):
            dep.kill_tree(proc)
        with capsys.disabled():
            print(
                f"\nkilled the coordinator with the parties' entries in states "
                f"{sorted(r[3] for rows in at_kill.values() for r in rows)}"
            )
        assert all(
            len(rows) == 1 and rows[0][1:4] in {("release", 1.0, "reserved"), ("release", 1.0, "released")}
            for rows in at_kill.values()
        ), at_kill
        _assert_no_partial_model(out_killed, killed_run)

        # ---- the parties finish on their own; their reservations stay counted
        dep.wait_until(
            "the parties to finish the killed run's training",
            lambda: all(r[3] != "reserved" for paths in parties.values() for r in ledger_rows(paths["ledger"])),
            timeout=60.0,
        )

        # ---- restart on the same database; the SuperNodes come back by themselves
        fed.start_superlink(database, name="superlink-restarted")
        fed.wait_online(len(PARTIES), timeout=90.0)
        fed.assert_loopback_only()
        assert _runs(fed)[killed_run] == "running"  # not resumed, not failed: stale until stopped
        # the bundle is reproducible: a party can compare the run's code with a build of the source
        assert _runs(fed, "fab-hash")[killed_run] in bundle_hashes
        code, output = fed.flwr("flwr-stop", ["stop", killed_run, fed.connection])
        assert code == 0, output
        assert _runs(fed)[killed_run].startswith("finished:"), _runs(fed)

        # ---- a new run: new request ids, each party spends again, nothing counted twice
        report, view = fed.run_and_load("run-after-restart", run_config, tmp_path / "out-new")
        assert report["status"] == "completed" and report["run_id"] != killed_run, report
        assert all(p["status"] == "accepted" and p["signed"] for p in report["parties"]), report["parties"]
        assert view.forest.n_trees == 2 * len(PARTIES)
        for party_id, paths in parties.items():
            rows = ledger_rows(paths["ledger"])
            request_ids = [r[0] for r in rows]
            assert len(request_ids) == len(set(request_ids)), rows
            assert [(r[1], r[2], r[3], r[4]) for r in rows] == [
                ("release", 1.0, "released", killed_run),
                ("release", 1.0, "released", report["run_id"]),
                ("evaluation", 0.1, "released", report["run_id"]),
            ], rows
            assert rows[0][0] == at_kill[party_id][0][0]  # the killed run's entry, kept as it was reserved
            capsys.readouterr()
            assert main(["budget", str(paths["ledger"]), "--policy", str(paths["policy"]), "--json"]) == 0
            budget = json.loads(capsys.readouterr().out)
            assert budget["spent"] == pytest.approx(2.1) and budget["remaining"] == pytest.approx(2.9)
        _assert_no_partial_model(out_killed, killed_run)
        _assert_no_partial_model(tmp_path / "out-new")

        # ---- resume the killed run's training by its request tag: parties resend, spend nothing
        before = {p: ledger_rows(paths["ledger"]) for p, paths in parties.items()}
        resumed, resumed_view = fed.run_and_load(
            "run-resumed",
            {**run_config, "request-tag": killed_run, "evaluation-epsilon": 0.0},
            out_killed,  # into the killed run's directory: its claim is taken over (the killed process is gone)
        )
        assert resumed["status"] == "completed", resumed
        assert sorted(p.name for p in out_killed.iterdir()) == sorted([MODEL, "report.json"])  # claim released
        assert all(p["status"] == "accepted" and p["signed"] for p in resumed["parties"]), resumed["parties"]
        assert resumed_view.forest.n_trees == 2 * len(PARTIES)
        assert {p: ledger_rows(paths["ledger"]) for p, paths in parties.items()} == before
        # (a reused tag with other parameters is refused, spending nothing: tests/federation/test_party.py, through
        # the party's handlers; a run of its own here cost about 40 s of CPU for no other path)

    seconds = run_guarded(dep, scenario)
    with capsys.disabled():
        print(f"\ncoordinator crash and restart: {seconds:.1f} s")


_WRITER = """
import sys
from protocol import save_atomic
path, first, second = sys.argv[1:4]
models = [open(first, "rb").read(), open(second, "rb").read()]
print("writing", flush=True)
i = 0
while True:
    save_atomic(path, models[i % 2])
    i += 1
"""


def test_a_killed_model_writer_leaves_a_complete_model_or_none(tmp_path):
    from edprf_core import EDPRFClassifier, load_embedded
    from protocol import ReleasePolicy, build_global_model, decode_release, encode_release

    X, y, schema = load_embedded("wall_robot_navigation")
    sources = []
    for name, trees in (("first", 60), ("second", 40)):  # about 0.5 MB each: a kill often lands mid-write
        releases = [
            decode_release(
                encode_release(
                    EDPRFClassifier(schema, epsilon=1.0, n_trees=trees, max_depth=8, n_bins=20)
                    .fit(X.iloc[i::3], y.iloc[i::3])
                    .forest_,
                    f"party-{i}",
                ),
                schema,
                ReleasePolicy(max_n_trees=1000),
            )
            for i in range(3)
        ]
        path = tmp_path / f"{name}.model"
        path.write_bytes(build_global_model(schema, releases, {"run_id": name}))
        sources.append(path)
    out = tmp_path / "out"
    out.mkdir()
    target = out / MODEL
    contents = {p.read_bytes() for p in sources}
    rng = random.Random(0)
    for trial in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(target), *map(str, sources)],
            stdout=subprocess.PIPE,
            cwd=tmp_path,
            start_new_session=True,
        )
        try:
            assert writer.stdout.readline().strip() == b"writing"
            time.sleep(rng.uniform(0.05, 0.4))
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=10)
            writer.stdout.close()
        if target.exists():
            assert target.read_bytes() in contents, f"trial {trial}: a truncated or mixed model at {target}"
            load_global_model(target)
    leftovers = sorted(p.name for p in out.iterdir() if p != target)
    print(f"\n{len(leftovers)} of 5 kills left a temporary file: {leftovers}")
    assert all(n.startswith(f".{MODEL}.") and n.endswith(".tmp") for n in leftovers), leftovers
