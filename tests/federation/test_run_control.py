"""Run control and readable reports (issue 22): the output directory, resumed releases, failures, party names.

The deployed path (Flower marks the run failed, `edprf run` exits 1) is in
tests/deployment/test_consortium.py; here the pieces, and whole in-process simulated runs.
"""

from __future__ import annotations

import fcntl
import json
import logging
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from client import load_policy
from edprf_core import EDPRFClassifier, load_embedded
from edprf_fl.simulation import prepare_workspace, simulate_federation
from server import REPORT_FILE, CoordinatorConfig, PartyOutcome, RunReport, run_federation
from server._guarantee import PartySpend, federation_guarantee
from server._party_names import claimed_party_id, name_evaluation
from server._run_control import (
    CLAIM_NAME,
    OutputDirInUse,
    claim_output_dir,
    failure_text,
    release_output_dir,
    resumed_evaluation_skip,
)
from server._summary import federated_evaluation_lines, summary_lines

from .test_simulation import _settings


def test_an_output_dir_holding_a_run_is_refused_unless_overwrite(tmp_path):
    cfg = CoordinatorConfig(schema_path="s.toml", output_dir=str(tmp_path / "out"))
    assert claim_output_dir(cfg) == tmp_path / "out"  # new directory: fine
    release_output_dir(tmp_path / "out")
    (tmp_path / "out").mkdir()  # (released empty, the directory it created went: test_an_empty_output_dir_...)
    (tmp_path / "out" / "notes.txt").write_text("operator's notes")
    claim_output_dir(cfg)  # a directory without a run is fine too
    release_output_dir(tmp_path / "out")
    (tmp_path / "out" / "report.json").write_text("{}")
    with pytest.raises(OutputDirInUse, match=r"already holds a run \(report.json\).*overwrite=true"):
        claim_output_dir(cfg)
    (tmp_path / "out" / "global-model.edprf").write_bytes(b"model")
    claim_output_dir(replace(cfg, overwrite=True))
    release_output_dir(tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]


def test_an_empty_output_dir_the_run_created_is_removed_when_released(tmp_path):
    """Ctrl-C during `edprf consortium` (or any run stopped before it wrote anything) left an empty
    runs/<time>/ behind.  Released empty, a directory the run created goes; one that existed before, or that
    holds anything, stays."""
    cfg = CoordinatorConfig(schema_path="s.toml", output_dir=str(tmp_path / "runs" / "new"))
    out = claim_output_dir(cfg)
    assert (out / CLAIM_NAME).is_file()
    release_output_dir(out)
    assert not out.exists() and (tmp_path / "runs").is_dir()  # only the run's own directory, not its parent
    out.mkdir()  # made by the operator, say a mount point: kept
    release_output_dir(claim_output_dir(cfg))
    assert out.is_dir() and list(out.iterdir()) == []
    out.rmdir()
    claim_output_dir(cfg)
    (out / "report.json").write_text("{}")  # the run wrote something: kept
    release_output_dir(out)
    assert [p.name for p in out.iterdir()] == ["report.json"]
    # a crashed run's claim, taken over: the directory that run created still goes when left empty
    gone = tmp_path / "runs" / "crashed"
    crashed = _Claimant(gone, "crashed")
    crashed.end()  # without releasing its claim
    assert json.loads((gone / CLAIM_NAME).read_text())["created"] is True
    release_output_dir(claim_output_dir(replace(cfg, output_dir=str(gone))))
    assert not gone.exists()


def test_a_run_holds_its_output_dir_while_it_runs(tmp_path):
    """Day-2 walkthrough: two runs sent to one output-dir a second apart both ran, and the second's report replaced
    the first's model (both had spent).  Now the second is refused while the first's process runs; a claim left by
    a process that is gone (a crash) is taken over, so a resubmission after a crash works."""
    cfg = CoordinatorConfig(schema_path="s.toml", output_dir=str(tmp_path / "out"), overwrite=True)
    claim = tmp_path / "out" / CLAIM_NAME
    other = _Claimant(tmp_path / "out", "run-a")  # another ServerApp's process, running
    try:
        with pytest.raises(OutputDirInUse, match=r"is being written by run run-a \(process \d+ on .*\), still running"):
            claim_output_dir(cfg, "run-b")  # overwrite does not take a running run's directory
        assert json.loads(claim.read_text())["pid"] == other.pid  # the refusal left the holder's claim alone
    finally:
        other.end()  # without releasing its claim: a crash
    assert claim_output_dir(cfg, "run-b") == tmp_path / "out"  # its process is gone: taken over
    assert json.loads(claim.read_text())["run"] == "run-b"
    release_output_dir(tmp_path / "out")
    assert not claim.exists()
    claim.parent.mkdir(exist_ok=True)  # (run-a created it; released empty, it went)
    # a claim from another host name (another machine, or this container before a restart) counts as running,
    # and the refusal says why and which file to delete
    claim.write_text(json.dumps({"run": "run-c", "pid": 4242, "host": "coordinator-before-restart"}))
    with pytest.raises(OutputDirInUse, match=r"another host name, whose processes this one cannot see") as refused:
        claim_output_dir(cfg, "run-d")
    assert str(claim) in str(refused.value)


def test_two_coordinators_taking_over_one_crashed_run_s_claim_at_once_are_not_both_granted(tmp_path):
    """Crash review (R2): two coordinators resubmitted after a crash both judged the crashed run's claim stale; the
    first replaced it, the second unlinked the first's fresh claim and made its own: both were granted the
    directory, both runs spent the parties' epsilon, and the second's report replaced the first's model.

    Deterministic interleaving: each claimant (its own process) stops right after it has read the claim it judges
    (``_holder``, which every claimant calls, granted or refused), until both have read it; then one goes on to
    its answer, and the other only once that one is answered and still holds its claim (alive)."""
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process that is gone: the crashed run
    claim = out / CLAIM_NAME
    claim.write_text(json.dumps({"run": "crashed", "pid": dead.pid, "host": socket.gethostname(), "created": False}))
    spawn = multiprocessing.get_context("spawn")
    both_read, turn, answered, results = spawn.Barrier(2), spawn.Lock(), spawn.Event(), spawn.Queue()
    racers = [
        spawn.Process(target=_racer, args=(str(out), run, both_read, turn, answered, results))
        for run in ("run-a", "run-b")
    ]
    try:
        for racer in racers:
            racer.start()
        said = {}
        for _ in racers:
            run, answer, text = results.get(timeout=120)
            said.setdefault(answer, []).append((run, text))
        assert sorted(said) == ["granted", "refused"], said  # exactly one granted
        ((granted, _),), ((_, refusal),) = said["granted"], said["refused"]
        assert "still running; nothing was sent to the parties" in refusal
        holder = json.loads(claim.read_text())  # while the granted run still runs
        assert holder["run"] == granted and holder["pid"] in {r.pid for r in racers}
    finally:
        answered.set()
        for racer in racers:
            racer.join(60)
            if racer.exitcode is None:
                racer.kill()
                racer.join()


def test_a_claim_created_and_not_yet_written_by_a_running_process_is_refused(tmp_path):
    """Crash review (R2b): a claim file created but not yet written read as ``{}``, which named no running process,
    so a second run took it over while the first went on.  The first holds it (locked) from the moment it opens
    it: the second is refused, and the empty claim is left alone; once that process is gone it is taken over."""
    out = tmp_path / "out"
    out.mkdir()
    claim = out / CLAIM_NAME
    spawn = multiprocessing.get_context("spawn")
    held, done = spawn.Event(), spawn.Event()
    first = spawn.Process(target=_lock_unwritten, args=(str(claim), held, done))
    first.start()
    try:
        assert held.wait(60), "the first claimant did not lock its claim"
        cfg = CoordinatorConfig(schema_path="s.toml", output_dir=str(out))
        with pytest.raises(OutputDirInUse, match=r"being written by run \? \(process \? on .+\), still running"):
            claim_output_dir(cfg, "run-b")
        assert claim.read_bytes() == b""
    finally:
        done.set()
        first.join(60)
        if first.exitcode is None:
            first.kill()
            first.join()
    assert first.exitcode == 0
    assert claim_output_dir(cfg, "run-b") == out  # created, never written, its process gone: taken over
    assert json.loads(claim.read_text())["run"] == "run-b"
    release_output_dir(out)


def test_a_claim_naming_a_live_process_that_does_not_hold_it_is_taken_over(tmp_path):
    """Crash review (8a): after a container restart with a fixed host name, the crashed run's pid can be another
    live process's (pids restart low), and its claim counted as running forever.  A claim is running while a
    process holds it (locked), whatever pid it names: here the pid of this test's parent, alive, not holding it."""
    out = tmp_path / "out"
    out.mkdir()
    claim = out / CLAIM_NAME
    host = socket.gethostname()
    claim.write_text(json.dumps({"run": "before-restart", "pid": os.getppid(), "host": host, "created": False}))
    assert claim_output_dir(CoordinatorConfig(schema_path="s.toml", output_dir=str(out)), "run-new") == out
    assert json.loads(claim.read_text()) == {"run": "run-new", "pid": os.getpid(), "host": host, "created": False}
    release_output_dir(out)
    assert not claim.exists()


def test_a_claim_released_while_another_run_opens_it_is_not_held_by_that_run(tmp_path, monkeypatch):
    """A run removes its claim (and the directory it made, if empty) when it lets go.  A run that opened the claim
    just before, and locks it just after, would hold a file no longer in the directory, and a third run would create
    and hold another at the same time: it opens the claim again (making the directory again) and holds that."""
    out = tmp_path / "out"
    first = _Claimant(out, "run-a", release=True)
    lock = fcntl.flock

    def first_lets_go_then_lock(fd, operation):
        first.end()  # between this run's open of the claim and its lock (the second call: nothing to end)
        return lock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", first_lets_go_then_lock)
    cfg = CoordinatorConfig(schema_path="s.toml", output_dir=str(out))
    assert claim_output_dir(cfg, "run-b") == out
    assert json.loads((out / CLAIM_NAME).read_text())["run"] == "run-b"  # the claim in the directory is run-b's
    assert first.released
    release_output_dir(out)
    assert not out.exists()  # made again by run-b, released empty


class _Claimant:
    """A coordinator in a process of its own (spawned) that claims ``out`` as ``run`` and holds it until
    :meth:`end`, which ends the process without releasing the claim (as a crash would), or releasing it first
    (``release``)."""

    def __init__(self, out: Path, run: str, *, release: bool = False) -> None:
        spawn = multiprocessing.get_context("spawn")
        self._held, self._done, self._released = spawn.Event(), spawn.Event(), spawn.Event()
        self._process = spawn.Process(
            target=_claim_and_hold, args=(str(out), run, release, self._held, self._done, self._released)
        )
        self._process.start()
        if not self._held.wait(60):
            self.end()
            raise AssertionError(f"the claimant of {out} did not claim it")
        self.pid = self._process.pid

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def end(self) -> None:
        if self._process.exitcode is not None:
            return
        self._done.set()
        self._process.join(60)
        if self._process.exitcode is None:
            self._process.kill()
            self._process.join()


def _claim_and_hold(out: str, run: str, release: bool, held, done, released) -> None:
    claim_output_dir(CoordinatorConfig(schema_path="s.toml", output_dir=out, overwrite=True), run)
    held.set()
    done.wait(60)
    if release:
        release_output_dir(Path(out))
        released.set()


def _lock_unwritten(claim: str, held, done) -> None:
    """A claimant between creating its claim file (locked, as every claimant holds it) and writing it."""
    fd = os.open(claim, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    held.set()
    done.wait(60)


def _racer(out: str, run: str, both_read, turn, answered, results) -> None:
    from server import _run_control

    read = _run_control._holder
    state = {"first read": True, "my turn": False}

    def read_then_wait(*args):
        holder = read(*args)
        if state["first read"]:
            state["first read"] = False
            both_read.wait(60)  # both have read the crashed run's claim
            state["my turn"] = turn.acquire(timeout=60)  # one goes on; the other once that one is answered
        return holder

    _run_control._holder = read_then_wait
    try:
        claim_output_dir(CoordinatorConfig(schema_path="s.toml", output_dir=out), run)
        results.put((run, "granted", ""))
    except OutputDirInUse as exc:
        results.put((run, "refused", str(exc)))
    except threading.BrokenBarrierError as exc:  # the other never read the claim: the test fails on it, by name
        results.put((run, "error", repr(exc)))
    finally:
        if state["my turn"]:
            turn.release()
    answered.wait(60)  # a granted run keeps running (holding its claim) until the test has looked


def test_require_exact_sampling_is_on_by_default_and_off_for_seeded_simulations(tmp_path):
    assert CoordinatorConfig(schema_path="s.toml").require_exact_sampling is True
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert "\nrequire-exact-sampling = true\n" in text
    seeded = prepare_workspace(_settings(parties=2, max_depth=2, seeded_noise=True), tmp_path / "a").config
    crypto = prepare_workspace(_settings(parties=2, max_depth=2, seeded_noise=False), tmp_path / "b").config
    assert seeded.require_exact_sampling is False and crypto.require_exact_sampling is True


def _outcome(node: int, party: str, resumed: str = "", status: str = "accepted", reason: str = "") -> PartyOutcome:
    return PartyOutcome(
        node_id=node, status=status, reason=reason, party_id=party, epsilon=1.0, resumed_from_run=resumed
    )


def test_a_run_of_resumed_releases_skips_evaluation_and_says_what_was_new():
    cfg = CoordinatorConfig(schema_path="s.toml", request_tag="trial-1")
    report = RunReport("9", {}, "fp", parties=[_outcome(1, "a", "7"), _outcome(2, "b", "7")])
    skip = resumed_evaluation_skip(report, cfg)
    assert skip["skipped"] == "resumed_releases" and "run(s) 7" in skip["message"]
    assert resumed_evaluation_skip(report, replace(cfg, evaluate_resumed=True)) is None
    mixed = RunReport("9", {}, "fp", parties=[_outcome(1, "a", "7"), _outcome(2, "b")])
    assert resumed_evaluation_skip(mixed, cfg) is None  # another model: evaluated

    # review rev-day2 U7: "was evaluated then" only when the earlier run did evaluate (per the spend record)
    assert "was evaluated then with noised counts" in resumed_evaluation_skip(report, cfg, {"7": "noised"})["message"]
    not_evaluated = resumed_evaluation_skip(report, cfg, {})
    assert not_evaluated["skipped"] == "resumed_releases" and "was evaluated then" not in not_evaluated["message"]
    assert "the spend record holds no evaluation of the interrupted run (7)" in not_evaluated["message"]
    assert not_evaluated["message"].endswith("evaluate-resumed=true asks for it (each party spends evaluation-epsilon)")
    unknown = resumed_evaluation_skip(report, cfg, None)["message"]
    assert "only if that run's report.json holds a federated evaluation" in unknown


def test_a_resumed_exact_metrics_run_is_told_how_the_model_was_evaluated_and_what_asking_costs():
    """Review rev-s65 F5: an interrupted run that evaluated with exact metrics wrote no spend row, and its resumed run
    was told "did not evaluate it ... (each party spends evaluation-epsilon)": both halves wrong in that mode."""
    cfg = CoordinatorConfig(schema_path="s.toml", request_tag="trial-1", exact_metrics=True)
    report = RunReport("9", {}, "fp", parties=[_outcome(1, "a", "7"), _outcome(2, "b", "7")])
    marked = resumed_evaluation_skip(report, cfg, {"7": "exact-metrics"})["message"]
    assert marked.endswith(
        "the model is theirs and was evaluated then with exact metrics (NOT DP), so it was not evaluated again "
        "(evaluate-resumed=true asks anyway)"
    )
    for evaluated in ({}, None):  # nothing recorded (a coordinator before 0.2.12), or no spend record
        message = resumed_evaluation_skip(report, cfg, evaluated)["message"]
        assert "did not evaluate" not in message and "spends evaluation-epsilon" not in message
        assert message.endswith("evaluate-resumed=true asks for it (exact metrics: NOT DP, no party spends epsilon)")
    assert "exact metrics, which it did not record" in resumed_evaluation_skip(report, cfg, {})["message"]

    forest = EDPRFClassifier(load_embedded()[2], max_depth=2, n_trees=1)  # production randomness
    X, y, _ = load_embedded()
    forest = forest.fit(X.iloc[:200], y.iloc[:200]).forest_
    fresh = federation_guarantee(forest, [PartySpend("a", 1.0, 0.1)])
    assert fresh.startswith("Spent for this run: epsilon = 1.1") and "Newly charged" not in fresh
    resumed = federation_guarantee(
        forest,
        [
            PartySpend("a", 1.0, 0.1, release_charged_before=True),
            PartySpend("b", 1.0, 0.1, release_charged_before=True),
        ],
    )
    assert resumed.startswith("Spent for this model: epsilon = 1.1 per record at most")
    assert "Newly charged by this run: epsilon = 0.1 per party at most" in resumed
    assert "releases of 2 of the 2 parties were resent" in resumed
    selected = federation_guarantee(forest, [PartySpend("a", 1.0, 0.1)], not_selected=4)
    assert "4 more parties released and spent their release epsilon in this run" in selected
    assert "chosen on the coordinator's own validation rows" in selected and "more part" not in fresh
    flagged = federation_guarantee(forest, [PartySpend("a", 1.0, 0.1)], flagged=1)
    assert "1 more party released and spent their release epsilon in this run" in flagged
    assert "left out as flagged low quality" in flagged
    both = federation_guarantee(forest, [PartySpend("a", 1.0, 0.1)], not_selected=2, flagged=1)
    assert "3 more parties released" in both and "(1 flagged as low quality, 2 by selective aggregation)" in both


def test_failure_text_and_summary_name_parties_by_id():
    report = RunReport(
        "5",
        {"flag_alpha": 0.01},
        "fp",
        parties=[
            _outcome(111, "hospital-a", status="refused", reason="budget_exhausted"),
            _outcome(222, "", status="no_reply", reason="timeout"),
        ],
    )
    report.status, report.failure = "failed", failure_text(report, 2)
    assert report.failure == (
        "0 valid releases, min-parties is 2; no model saved. hospital-a: refused "
        "(budget_exhausted); node 222: no_reply (timeout)"
    )
    lines = summary_lines(report)
    assert f"failure: {report.failure}" in lines
    assert "  hospital-a: refused (budget_exhausted)" in lines
    assert not any("111" in line for line in lines)


def test_registered_parties_no_reply_named_are_listed_once():
    """keys-dir registers hospital-c, whose SuperNode never connected: the failure says so by name (a node id is
    all a timeout shows, and hospital-c has none); a completed run's summary says it on a line of its own."""
    report = RunReport(
        "6", {}, "fp", parties=[_outcome(222, "", status="no_reply", reason="timeout")], absent_parties=["hospital-c"]
    )
    report.status, report.failure = "failed", failure_text(report, 2)
    assert report.failure.endswith(
        "node 222: no_reply (timeout). Registered parties no reply named: hospital-c (a SuperNode that did not "
        "connect, did not reply in time, failed before naming its party, or sent a release no registered key "
        "signed: see the node lines and that party's log)"
    )
    assert sum("hospital-c" in line for line in summary_lines(report)) == 1  # in the failure line only
    said = "  Registered parties no reply named: " + report.failure.split("Registered parties no reply named: ")[1]
    report.status, report.failure = "completed", ""
    assert [line for line in summary_lines(report) if "hospital-c" in line] == [said]


def test_the_summary_says_where_bounded_influence_cut_a_party_s_claim():
    cut = {"party": "hospital-a", "part": "marginals", "label": "no", "claimed": 31966.2, "counted": 24.4}
    report = RunReport("7", {}, "fp", status="completed", influence_cuts=[cut])
    lines = summary_lines(report)
    at = lines.index(next(line for line in lines if line.startswith("bounded influence")))
    assert "a class that one party alone holds is learned from it only up to twice" in lines[at]
    assert (
        lines[at + 1]
        == "  hospital-a, class 'no', marginals: weight 31,966 (about its rows of the class there), 24 counted"
    )
    assert not any(line.startswith("bounded influence") for line in summary_lines(RunReport("8", {}, "fp")))


def test_the_summary_names_evaluation_refusals_and_a_rejected_release_s_charge():
    """Three parties refused the evaluation request (budget spent) and the summary printed no evaluation line at
    all; a party whose release was rejected (unknown party-id) had charged its ledger, and nothing said so."""
    from server import PartyOutcome

    everyone_refused = {
        "parties": 0,
        "refused": [{"node_id": n, "party_id": f"h-{n}", "reason": "budget_exhausted"} for n in (1, 2, 3)],
        "no_reply": [],
    }
    lines = federated_evaluation_lines(everyone_refused)
    assert lines[0].startswith("parties' own held-out accuracy: not measured")
    assert "  h-2: not in the estimate (budget_exhausted)" in lines
    some = {
        "parties": 1,
        "noised": True,
        "epsilon_per_party": 0.1,
        "accuracy": 0.9,
        "ci95": [0.8, 0.95],
        "refused": [{"node_id": 2, "party_id": "h-2", "reason": "budget_exhausted"}],
        "no_reply": [3],
        "no_reply_parties": ["h-3"],
    }
    lines = federated_evaluation_lines(some)
    assert "epsilon 0.1 each, 1 party)" in lines[0]
    for shift, said in ((0.25, "by at most 0.250 "), (2.157, "move it anywhere in 0-1 (the bound, 2.16, exceeds")):
        reach = federated_evaluation_lines(some | {"max_one_party_shift": shift, "max_party_rows": 40})[1]
        assert said in reach and reach.endswith("(parties of at most 40 held-out rows)")  # not "at most 2.157"
    assert "  h-2: not in the estimate (budget_exhausted)" in lines
    assert "  no reply to the evaluation request: h-3" in lines
    # the intervals that allow for lying parties, beside the one that assumes none (rev-eval E2), and two parties'
    # reach beside one's (E1)
    robust = some | {
        "ci95_if_one_party_lied": [0.7, 0.99],
        "ci95_if_two_parties_lied": [0.6, 1.0],
        "max_one_party_shift": 0.2,
        "max_two_party_shift": 0.4,
        "max_party_rows": 40,
    }
    head, reach = federated_evaluation_lines(robust)[:2]
    assert head.endswith("0.9000 (95% interval 0.800-0.950; 0.700-0.990 if one party lied, 0.600-1.000 if two did)")
    assert reach == (
        "  any one party's reply can move it by at most 0.200, two parties' replies together by at most 0.400 "
        "(parties of at most 40 held-out rows)"
    )
    report = RunReport(
        "5", {}, "fp", parties=[PartyOutcome(7, "rejected", "unknown_party", rejected_release_epsilon=0.5)]
    )
    shown = summary_lines(report)
    assert (
        "    it sent a release: its ledger has charged up to epsilon 0.5 for it, which the model does not use" in shown
    )


def test_party_ids_claimed_in_replies_are_checked_and_evaluations_named():
    assert claimed_party_id({"party-id": "hospital-a"}) == "hospital-a"
    assert claimed_party_id({"party-id": "x" * 65}) == "" and claimed_party_id({"party-id": b"a"}) == ""
    assert claimed_party_id({"party-id": "a b"}) == "" and claimed_party_id({}) == ""
    evaluation = {
        "per_party": [{"node_id": 1, "accuracy": 0.8}],
        "refused": [{"node_id": 2, "reason": "x"}],
        "no_reply": [3],
    }
    name_evaluation(evaluation, [_outcome(1, "a"), _outcome(2, "b"), _outcome(3, "")])
    assert evaluation["per_party"][0]["party_id"] == "a" and evaluation["refused"][0]["party_id"] == "b"
    assert evaluation["no_reply_parties"] == ["node 3"]


@pytest.mark.slow
def test_a_refusing_party_is_named_by_its_policy_id_and_a_resumed_run_spends_nothing(tmp_path):
    cfg = prepare_workspace(_settings(parties=3, max_depth=3, evaluation_epsilon=0.1), tmp_path).config
    policy_path = Path(cfg.sim_dir) / "party-0002" / "policy.toml"
    policy = load_policy(policy_path)
    policy_path.write_text(replace(policy, max_n_trees=1, party_id="clinic-z").to_toml())
    _new_ledger(policy_path.parent)  # a ledger belongs to its party: a renamed party starts its own
    cfg = replace(
        cfg, n_trees=2, request_tag="trial-1", min_parties=2, evaluation_max_interval_width=1.0
    )  # the evaluation plumbing, not its informativeness
    for d in Path(cfg.sim_dir).glob("party-*"):  # room for the two trees
        p = load_policy(d / "policy.toml")
        if p.party_id != "clinic-z":
            (d / "policy.toml").write_text(replace(p, max_n_trees=2).to_toml())
    simulate_federation(cfg, 3)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    refused = [p for p in report["parties"] if p["status"] == "refused"]
    assert [(p["party_id"], p["reason"]) for p in refused] == [("clinic-z", "policy_trees")]
    assert report["status"] == "completed" and report["federated_evaluation"]["parties"] == 2
    assert {e["party_id"] for e in report["federated_evaluation"]["per_party"]} == {"party-0000", "party-0001"}

    # the same request-tag again: the releases are resent (charged by the first run), evaluation skipped
    again = tmp_path / "again"
    simulate_federation(replace(cfg, output_dir=str(again)), 3)
    second = json.loads((again / REPORT_FILE).read_text())
    accepted = [p for p in second["parties"] if p["status"] == "accepted"]
    assert len(accepted) == 2 and all(p["resumed_from_run"] == report["run_id"] for p in accepted)
    assert second["federated_evaluation"]["skipped"] == "resumed_releases"
    assert all(p["evaluation_epsilon"] == 0 for p in accepted)
    assert "Newly charged by this run: epsilon = 0 per party at most" in second["guarantee"]


@pytest.mark.parametrize(
    ("relation", "said"),
    [
        ("add-remove", "at most max(release, evaluation)"),
        ("replace-one", "the total (release + evaluation) is the bound"),
    ],
)
def test_the_run_guarantee_states_what_a_record_faces_under_its_relation(relation, said):
    """Under replace-one a record replaced by another can leave training while its replacement joins the held-out
    rows: the run guarantee said 'at most max(release, evaluation)' whatever the relation."""
    from server._guarantee import PartySpend, federation_guarantee

    X, y, schema = load_embedded("wall_robot_navigation")
    X, y = X[:400], y[:400]
    forest = EDPRFClassifier(schema, max_depth=2, n_trees=1, relation=relation).fit(X, y).forest_
    text = federation_guarantee(forest, [PartySpend("a", 1.0, 0.1)])
    assert said in text and "release 1 + noised evaluation 0.1" in text
    assert "max(release" not in federation_guarantee(forest, [PartySpend("a", 1.0)])


def test_a_refusal_is_said_once_in_the_run_s_log(tmp_path, caplog, monkeypatch):
    """`edprf consortium` streamed 'hospital-a refused: budget_exhausted ...' (the coordinator's warning: the
    ServerApp's process has no handler for it but Python's last resort, so without Flower's prefix) and then
    'INFO :   hospital-a: refused (budget_exhausted) ...' (the run's summary, which the ServerApp logs).  The run's
    log now shows the coordinator's INFO lines too (protocol.flower_console): the per-party line is at DEBUG."""
    from edprf_fl.simulation import _engine

    reports = []
    monkeypatch.setattr(_engine, "run_federation", lambda *a: reports.append(run_federation(*a)) or reports[-1])
    cfg = prepare_workspace(_settings(parties=2, max_depth=2, evaluation_epsilon=0.0), tmp_path).config
    for d in Path(cfg.sim_dir).glob("party-*"):
        policy = load_policy(d / "policy.toml")
        refusing = d.name == "party-0001"
        policy = replace(policy, max_n_trees=1 if refusing else 2, party_id="clinic-z" if refusing else policy.party_id)
        (d / "policy.toml").write_text(policy.to_toml())
        if refusing:
            _new_ledger(d)  # a ledger belongs to its party: a renamed party starts its own
    with caplog.at_level(logging.DEBUG, logger="edprf"):
        simulate_federation(replace(cfg, n_trees=2, min_parties=1), 2)
    # what the stream shows: the coordinator's records at INFO and above (Flower's console level), then the summary
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] + summary_lines(reports[0])
    assert [line for line in said if "clinic-z" in line and "policy_trees" in line] == [
        "  clinic-z: refused (policy_trees) 2 trees exceed the party's maximum 1"
    ]


def test_a_run_with_fewer_connected_parties_than_min_parties_asks_none_of_them(tmp_path):
    """Deployment walkthrough: with 1 of min-parties 2 connected the coordinator warned 'going on without the
    others', sent the request, the party's ledger charged it, and the run then failed with no model (and said
    'No party was connected')."""
    from client import read_budget

    cfg = prepare_workspace(_settings(parties=2, max_depth=2, evaluation_epsilon=0.0), tmp_path).config
    simulate_federation(replace(cfg, min_parties=3, node_wait_timeout=1.0), 2)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert report["status"] == "failed" and report["parties"] == []
    assert report["failure"].startswith("2 of min-parties 3 connected within node-wait-timeout (1 s); no request was")
    assert "no party spent epsilon" in report["failure"]
    parties = sorted(Path(cfg.sim_dir).glob("party-*"))
    assert len(parties) == 2
    for party in parties:  # never asked: no ledger, or one that holds nothing
        ledger = party / "ledger.sqlite"
        assert not ledger.exists() or read_budget(ledger, None).in_ledger == 0


def test_an_evaluation_skipped_is_said_once_in_the_run_s_log(tmp_path, caplog, monkeypatch):
    """With the coordinator's INFO lines in the run's log (protocol.flower_console), 'run N: evaluation not run, no
    epsilon spent: ...' came before the summary's "parties' own held-out accuracy: evaluation not run, ..."."""
    from edprf_fl.simulation import _engine

    reports = []
    monkeypatch.setattr(_engine, "run_federation", lambda *a: reports.append(run_federation(*a)) or reports[-1])
    cfg = prepare_workspace(_settings(parties=2, max_depth=2, evaluation_epsilon=0.1), tmp_path).config
    with caplog.at_level(logging.DEBUG, logger="edprf"):
        simulate_federation(replace(cfg, evaluation_max_interval_width=1e-9), 2)  # no epsilon is that informative
    assert reports[0].federated_evaluation["skipped"]
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] + summary_lines(reports[0])
    assert len([line for line in said if "evaluation not run, no epsilon spent" in line]) == 1, said


@pytest.mark.parametrize("parties", [2, 3])
def test_a_run_of_fewer_parties_than_bounded_influence_takes_says_so(tmp_path, caplog, monkeypatch, parties):
    """With two parties one forged release took the pooled model over (hostile-party review: accuracy 0.825 to
    0.074) while the run said 'completed' and nothing else: item 5's bounds apply from three parts on. The report,
    the log and the summary now say when they do not, and what keeps such a run from saving a model."""
    from edprf_fl.simulation import _engine

    reports = []
    monkeypatch.setattr(_engine, "run_federation", lambda *a: reports.append(run_federation(*a)) or reports[-1])
    cfg = prepare_workspace(_settings(parties=parties, max_depth=2, evaluation_epsilon=0.0), tmp_path).config
    with caplog.at_level(logging.WARNING, logger="edprf"):
        simulate_federation(cfg, parties)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    assert report["bounded_influence"] == {
        "applies": parties >= 3,
        "parts": parties,
        "needs": 3,
        "tolerated_parties": 1,
        "bounded_against": int(parties >= 3),
    }
    off = [line for line in summary_lines(reports[0]) if line.startswith("bounded influence: OFF")]
    warned = [r.getMessage() for r in caplog.records if "can decide the model" in r.getMessage()]
    if parties >= 3:
        assert off == [] and warned == []
    else:
        said = (
            "bounded influence: OFF: with 2 parties' releases nothing tells a forged release from an honest one, "
            "and either can decide the model; it takes 3 parties to bound one party's say (with min-parties=3, a run "
            "with fewer fails and saves no model)"
        )
        assert off == [said]
        assert len(warned) == 1 and "2 parties' releases merged" in warned[0]


def _new_ledger(party_dir: Path) -> None:
    """Remove the ledger (and its anchor) the workspace made for the party before it was renamed."""
    for f in party_dir.glob("ledger*"):
        f.unlink()


def test_the_spend_record_says_which_earlier_runs_evaluated(tmp_path):
    """Review rev-day2 U7: a run interrupted before its evaluation round has no evaluation row."""
    from fractions import Fraction

    from server._spend_store import SpendStore

    store = SpendStore(tmp_path / "spend.sqlite", {"a": "sha256:a"})
    store.add("a", "7/train", Fraction(1, 2), "7")
    store.add("a", "7/123/evaluate", Fraction(1, 20), "7")
    store.add("a", "8/train", Fraction(1, 2), "8")  # killed before its evaluation
    assert store.evaluated_runs(["7", "8", "9"]) == {"7": "noised"}
    assert store.evaluated_runs([]) == {}
    store.note_exact_evaluation("9")  # review rev-s65 F5: exact metrics charge nothing; a marker says it evaluated
    store.note_exact_evaluation("9")
    assert store.evaluated_runs(["7", "8", "9"]) == {"7": "noised", "9": "exact-metrics"}
    assert store.totals() == {"a": Fraction(21, 20)}  # the marker charges nothing


def test_an_exact_metrics_evaluation_round_marks_its_run_in_the_spend_record(tmp_path, monkeypatch):
    """Review rev-s65 F5: the evaluation round writes a spend row per party for noised counts and, for exact metrics
    (no epsilon, no row), the run's marker; a marker that cannot be written is logged and the run goes on."""
    import sqlite3
    from fractions import Fraction
    from types import SimpleNamespace

    import server._coordinator as coordinator
    from server._spend_store import SpendStore

    store = SpendStore(tmp_path / "spend.sqlite", {"a": "sha256:a", "b": "sha256:b"})
    monkeypatch.setattr(coordinator, "evaluation_plan", lambda *_a: SimpleNamespace(send=True))
    monkeypatch.setattr(coordinator, "_evaluation_round", lambda *_a: ({"parties": 2}, {1, 2}))
    monkeypatch.setattr(coordinator, "_charge_evaluation", lambda *_a: None)
    monkeypatch.setattr(coordinator, "federation_guarantee", lambda *_a: "")
    for run, exact in (("7", False), ("8", True)):
        report = RunReport(run, {}, "fp", parties=[_outcome(1, "a"), _outcome(2, "b")])
        cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.1, exact_metrics=exact)
        coordinator._evaluate_if_informative(None, cfg, run, b"m", None, report, store)
    assert store.evaluated_runs(["7", "8"]) == {"7": "noised", "8": "exact-metrics"}
    assert store.totals() == {"a": Fraction(1, 10), "b": Fraction(1, 10)}

    def broken(*_a):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SpendStore, "note_exact_evaluation", broken)
    report = RunReport("9", {}, "fp", parties=[_outcome(1, "a"), _outcome(2, "b")])
    cfg = CoordinatorConfig(schema_path="s.toml", exact_metrics=True)
    coordinator._evaluate_if_informative(None, cfg, "9", b"m", None, report, store)  # logged, not raised
    assert "9" not in store.evaluated_runs(["9"])
