"""What Flower's logger shows the user: no traceback for a refused run, no colour codes off a terminal.

Hospital IT walkthrough: a run every party refused ended, in `edprf run`'s output, with Flower's traceback of
the ServerApp's ``RunFailed`` and "Exit Code: 201 ... An unhandled exception occurred in the ServerApp"; and
Flower's colour codes (``\\x1b[92mINFO \\x1b[0m:``) were in the output and the process logs of `edprf
consortium`, neither a terminal.  The whole path, with real Flower processes, is in
tests/deployment/test_consortium.py; here the pieces.
"""

from __future__ import annotations

import io
import logging
import sys

import pytest

from edprf_fl import colour_flower_logs_on_terminals_only, is_terminal, without_colour
from server import PartyOutcome, RunReport
from server._failure_log import failure_lines, quiet_flower_traceback
from server._run_control import RunFailed

COLOURED = "\x1b[92mINFO \x1b[0m:      Starting Flower SuperNode\n"


@pytest.fixture
def flower_console():
    """Flower's logger with one more console at INFO (as Flower's own) and one at DEBUG; its filters restored."""
    from flwr.common.logger import FLOWER_LOGGER

    filters = list(FLOWER_LOGGER.filters)
    streams = {"info": io.StringIO(), "debug": io.StringIO()}
    handlers = []
    for name, level in (("info", logging.INFO), ("debug", logging.DEBUG)):
        handler = logging.StreamHandler(streams[name])
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        FLOWER_LOGGER.addHandler(handler)
        handlers.append(handler)
    yield FLOWER_LOGGER, streams
    for handler in handlers:
        FLOWER_LOGGER.removeHandler(handler)
    FLOWER_LOGGER.filters[:] = filters


def _as_flower_reports(log: logging.Logger, exc: Exception) -> None:
    """What Flower 1.41's run_serverapp and flwr_exit log when a ServerApp raises ``exc``."""
    log.error("%s raised an exception", "ServerApp", exc_info=exc)
    log.error("Exit Code: 201\n\nAn unhandled exception occurred in the ServerApp.\n\nFor more information, visit")


def _raised(exc: Exception) -> Exception:
    """``exc`` with a traceback, as Flower's ``except Exception as ex`` has it."""
    try:
        raise exc
    except Exception as caught:  # noqa: BLE001 (any exception: it is the value returned)
        return caught


def test_flowers_traceback_of_a_failed_run_is_at_debug_only(flower_console):
    log, streams = flower_console
    quiet_flower_traceback()
    quiet_flower_traceback()  # once per process, however often called
    assert sum(type(f).__name__ == "_RunFailedAtDebug" for f in log.filters) == 1
    _as_flower_reports(log, _raised(RunFailed("0 valid release(s), min-parties is 3; no model saved")))
    assert streams["info"].getvalue() == ""
    debug = streams["debug"].getvalue()
    assert "Traceback" in debug and "RunFailed: 0 valid release(s)" in debug and "Exit Code: 201" in debug
    assert debug.startswith("DEBUG ServerApp raised an exception")
    log.error("Exit Code: 201 of a later defect")  # the failed run's exit was demoted once: a later one is shown
    assert streams["info"].getvalue() == "ERROR Exit Code: 201 of a later defect\n"


def test_any_other_exception_keeps_flowers_error_and_traceback(flower_console):
    log, streams = flower_console
    quiet_flower_traceback()
    log.error("Exit Code: 201 before any RunFailed")  # not armed yet: Flower's own exit message stays
    _as_flower_reports(log, _raised(KeyError("a defect")))
    info = streams["info"].getvalue()
    assert info.startswith("ERROR Exit Code: 201 before any RunFailed")
    assert "ERROR ServerApp raised an exception\nTraceback" in info and "KeyError: 'a defect'" in info


def test_failure_lines_name_who_refused_and_what_to_do():
    parties = [
        PartyOutcome(node_id=1, status="refused", reason="budget_exhausted", party_id="hospital-a"),
        PartyOutcome(node_id=2, status="refused", reason="budget_exhausted", party_id="hospital-b"),
        PartyOutcome(node_id=3, status="refused", reason="policy_depth", party_id="hospital-c"),
        PartyOutcome(node_id=4, status="no_reply", reason="timeout"),
        PartyOutcome(node_id=5, status="accepted", party_id="hospital-e"),
    ]
    report = RunReport("7", {}, "fp", parties=parties, status="failed", failure="1 valid release(s), min-parties 5")
    head, *steps = failure_lines("7", report)
    assert head == "edprf run 7 FAILED (the failure and each party's reason are above); what to do:"
    assert steps[0].startswith("  hospital-a, hospital-b (budget_exhausted): the request would pass the lifetime")
    assert steps[1].startswith("  hospital-c (policy_depth): outside that party's policy")
    assert steps[2].startswith("  node 4 (timeout): no reply within round-timeout")
    assert "hospital-e" not in "".join(steps[:4])  # the accepted party is not named
    assert steps[3] == "  or run without the parties above: a lower min-parties (their releases are then left out)"
    # ... except as one that spent: its release, made for request '7/train', is resent for request-tag '7'
    assert steps[4] == "  spent: hospital-e: its release, which it can resend"
    assert steps[5].startswith("  may have spent: node 4 (no reply, or a failure after its ledger reserved")
    assert steps[6].startswith("  to use those releases without spending again: submit with request-tag='7' and")
    assert len(steps) == 7
    # nobody accepted: a lower min-parties cannot help, and is not advised (deployment walkthrough)
    refused = RunReport("9", {}, "fp", parties=parties[:2], status="failed", failure="0 valid release(s)")
    assert not any("min-parties" in line for line in failure_lines("9", refused))
    nobody = RunReport("8", {}, "fp", parties=[], status="failed", failure="0 valid release(s). No party was connected")
    assert failure_lines("8", nobody) == ["edprf run 8 FAILED: the failure is above"]  # the summary's line


def test_a_party_setup_refusal_s_next_step_is_the_party_check():
    """The advice for party_setup was only 'see its line above', and that line says the party is not set up."""
    parties = [PartyOutcome(node_id=1, status="refused", reason="party_setup", party_id="hospital-a")]
    report = RunReport("7", {}, "fp", parties=parties, status="failed", failure="0 valid releases")
    assert failure_lines("7", report)[1] == (
        "  hospital-a (party_setup): the party's own files or settings are wrong (its SuperNode log names them): "
        "ask its operator to run `edprf party check --node-config ...` there, which lists every problem"
    )


def test_colour_codes_go_and_nothing_else():
    assert without_colour(COLOURED) == "INFO :      Starting Flower SuperNode\n"
    assert without_colour(COLOURED.encode()) == b"INFO :      Starting Flower SuperNode\n"
    hostile = "\x1b[2J\x1b]0;title\x07 plain"  # not a colour code: left for terminal_safe's escaping
    assert without_colour(hostile) == hostile
    assert not is_terminal(io.StringIO()) and not is_terminal(object())


def test_flower_colours_only_on_a_terminal(monkeypatch):
    from flwr.common.logger import console_handler

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(console_handler, "colored", True)
    monkeypatch.setattr(console_handler, "stream", io.StringIO())
    colour_flower_logs_on_terminals_only()
    assert console_handler.colored is False
    record = logging.LogRecord("flwr", logging.INFO, __file__, 1, "Starting", None, None)
    assert "\x1b" not in console_handler.format(record)
    monkeypatch.setattr(console_handler, "stream", Tty())
    colour_flower_logs_on_terminals_only()
    assert console_handler.colored is True  # Flower's own behaviour on a terminal


def test_a_deployments_process_logs_are_written_without_colour(tmp_path):
    """`edprf consortium` writes each Flower process's output to logs/<name>.log: Flower's colour codes were there."""
    from edprf_fl.cli._flower_processes import Deployment

    dep = Deployment(root=tmp_path, env={"PATH": "/usr/bin:/bin"})
    script = f"import sys; sys.stdout.write({COLOURED!r} * 3); sys.stdout.write('last line, no newline')"
    proc = dep.start("noisy", [sys.executable, "-c", script], role="doomed")
    assert dep.wait_exit(proc, 30) == 0
    dep.stop()
    text = (tmp_path / "logs" / "noisy.log").read_text()
    assert text == "INFO :      Starting Flower SuperNode\n" * 3 + "last line, no newline"


def test_the_log_copier_drains_a_process_s_output_when_its_log_cannot_be_written():
    """A failed log write (disk full, or the log closed after the wait) made the copier close the pipe: the
    process's next line then raised BrokenPipeError in the SuperLink or SuperNode (review)."""
    import os
    import threading
    import time

    from edprf_fl.cli._flower_processes import _copy_plain

    read_end, write_end = os.pipe()
    log = io.BytesIO()
    log.close()  # every write fails
    copier = threading.Thread(target=_copy_plain, args=(os.fdopen(read_end, "rb"), log), daemon=True)
    copier.start()
    try:
        for k in range(3):
            os.write(write_end, b"\x1b[92mINFO \x1b[0m: line %d\n" % k)  # BrokenPipeError if the copier gave up
            time.sleep(0.1)
    finally:
        os.close(write_end)
    copier.join(5)
    assert not copier.is_alive()  # the output's end still ends the copy


def test_failure_lines_say_who_spent_and_the_request_tag_that_spends_nothing_more():
    """Deployment walkthrough: a run that failed after some parties released said nothing of their spend, and the
    advice it gave (a new run) spent their epsilon again."""
    parties = [
        PartyOutcome(node_id=1, status="accepted", party_id="hospital-a", marginals_share=0.9, marginals_bins=12),
        PartyOutcome(node_id=2, status="accepted", party_id="hospital-b", resumed_from_run="41"),  # charged by 41
        PartyOutcome(node_id=3, status="rejected", reason="bad_signature", release_bytes=900),  # a release came
        PartyOutcome(node_id=4, status="refused", reason="budget_exhausted", party_id="hospital-d"),  # before it
        PartyOutcome(node_id=5, status="refused", reason="request_spent", party_id="hospital-e"),  # an earlier one
        PartyOutcome(node_id=6, status="refused", reason="internal_error", party_id="hospital-f"),  # maybe after
        PartyOutcome(node_id=7, status="failed", reason="client_error"),
        PartyOutcome(node_id=8, status="refused", reason="not_registered", party_id="hospital-h"),  # before it
    ]
    report = RunReport("7", {"request_tag": "trial-2", "marginals_bins": 0}, "fp", parties=parties, status="failed")
    lines = failure_lines("7", report)
    spent = "\n".join(line for line in lines if line.startswith(("  spent:", "  may have spent:")))
    assert "  spent: hospital-a: its release, which it can resend" in lines
    assert "  spent: node 3: a release the coordinator rejected (resent, it is rejected again)" in lines
    [maybe] = [line for line in lines if line.startswith("  may have spent: ")]
    assert maybe.startswith("  may have spent: hospital-f, node 7 (no reply")
    [how] = [line for line in lines if line.startswith("  to use those releases")]
    # the grid the rule chose for this many parties, pinned: more or fewer parties would be asked for another
    assert "request-tag='trial-2' marginals-bins=12 and otherwise the same run config, with a new output-dir" in how
    for other in ("hospital-b", "hospital-d", "hospital-e", "hospital-h"):
        assert other not in spent
    declared = RunReport("7", {"marginals_bins": 8}, "fp", parties=parties[:1], status="failed")
    assert "marginals-bins" not in failure_lines("7", declared)[-1]  # given in the run config: the same again
    refused = RunReport("9", {}, "fp", parties=parties[3:5], status="failed", failure="0 valid releases")
    assert not any("spent:" in line for line in failure_lines("9", refused))  # nobody reserved: nothing to say


@pytest.fixture
def flower_console_stream():
    """Flower's own console handler writing to a StringIO; the ``edprf`` loggers' handlers and levels, Flower's
    filters and the handler's colour restored afterwards."""
    from flwr.common.logger import FLOWER_LOGGER, console_handler

    stream = io.StringIO()
    old_stream, colored = console_handler.setStream(stream), console_handler.colored
    saved = {
        name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers))
        for name in ("edprf", "edprf_core")
    }
    filters = list(FLOWER_LOGGER.filters)
    yield stream
    if old_stream is not None:
        console_handler.setStream(old_stream)
    console_handler.colored = colored
    for name, (level, handlers) in saved.items():
        logging.getLogger(name).setLevel(level)
        logging.getLogger(name).handlers[:] = handlers
    FLOWER_LOGGER.filters[:] = filters


def _context(**kw):
    from flwr.app import Context, RecordDict

    return Context(run_id=7, node_id=0, node_config=kw.get("node_config", {}), state=RecordDict(), run_config={})


def test_the_coordinator_s_lines_reach_the_run_s_log_once_in_flower_s_format(flower_console_stream, monkeypatch):
    """The ServerApp's process had no handler for edprf.coordinator: its INFO lines (the spend record's path,
    'N parties connected', 'global model ... saved') were dropped and its WARNINGs came out through Python's
    last-resort handler, bare ('node ... no_reply: timeout'), in the run's log (deployment walkthrough)."""
    from flwr.common.logger import console_handler

    from server import server_app

    coordinator = logging.getLogger("edprf.coordinator")

    def reading_the_config(run_config):  # the run's own lines, then a refusal before any request
        coordinator.info("run 7: 2 parties connected")
        coordinator.warning("node 11 no_reply: timeout")
        coordinator.debug("a detail the run's log leaves out")
        logging.getLogger("edprf_core.forest").warning("a warning of the algorithm")
        logging.getLogger("edprf_core.forest").info("an INFO line of the algorithm, left out")
        raise ValueError("run config: no schema-path")

    monkeypatch.setattr(server_app.CoordinatorConfig, "from_run_config", staticmethod(reading_the_config))
    for _ in range(2):  # a second run in the same process: each line once
        start = len(flower_console_stream.getvalue())
        with pytest.raises(RunFailed):
            server_app.main(None, _context())
        assert flower_console_stream.getvalue()[start:].splitlines() == [
            "INFO :      run 7: 2 parties connected",
            "WARNING :   node 11 no_reply: timeout",
            "WARNING :   a warning of the algorithm",
            "ERROR :     edprf run 7: failed before any request was sent: run config: no schema-path",
        ]
    # after the run the process's loggers are as they were (a test run in-process leaks nothing into the next)
    assert all(console_handler not in logging.getLogger(n).handlers for n in ("edprf", "edprf_core"))
    before = flower_console_stream.getvalue()
    coordinator.warning("outside a run")
    assert flower_console_stream.getvalue() == before


def test_the_party_s_lines_reach_the_supernode_s_output_once_in_flower_s_format(flower_console_stream):
    """The ClientApp's process had no handler for edprf.party: 'released 2 trees at epsilon ...' was dropped and
    each refusal ('refused train: request_spent (...)') was written bare by Python's last-resort handler
    (deployment walkthrough); the party check's lines, logged through Flower's logger, had the prefix."""
    from flwr.common.logger import console_handler

    from client.client_app import lifespan

    party = logging.getLogger("edprf.party")
    for _ in range(2):  # the next message's hook, in the same process: each line once
        start = len(flower_console_stream.getvalue())
        hook = lifespan(_context(node_config={}))
        next(hook)  # the hook's part before the handler: the party's checks (of an empty node config: problems)
        checked = flower_console_stream.getvalue()
        assert "ERROR :     party check: problem: node config:" in checked[start:]
        party.info("released 2 trees at epsilon 1.0 (remaining 1)")
        party.warning("refused train: budget_exhausted (...)")
        assert flower_console_stream.getvalue()[len(checked) :].splitlines() == [
            "INFO :      released 2 trees at epsilon 1.0 (remaining 1)",
            "WARNING :   refused train: budget_exhausted (...)",
        ]
        with pytest.raises(StopIteration):  # the message handled: the hook ends
            next(hook)
    assert all(console_handler not in logging.getLogger(n).handlers for n in ("edprf", "edprf_core"))


def test_the_marginals_line_tells_the_parties_release_epsilon_from_the_sum_s_noise():
    """The numbers audit: the summary said "noise of one release at epsilon 0.548", the effective epsilon of three
    parties' summed noise, beside no figure of what each party spent."""
    from server._marginals_text import marginals_lines

    record = {
        "parties": ["a", "b", "c"],
        "bins": 20,
        "share": 0.9,
        "noise_epsilon": 0.548483,
        "release_epsilon": [0.95],
    }
    [line] = marginals_lines(record)
    assert "3 parties' histograms (each released at epsilon 0.95, split over the features) summed" in line
    assert (
        "the sum's noise is that of one release at epsilon 0.548: a description of the noise, not a privacy cost"
        in line
    )
    older = {k: v for k, v in record.items() if k != "release_epsilon"}  # a report written before the field
    assert "each released" not in marginals_lines(older)[0]


def test_an_evaluation_refused_for_a_redrawn_split_says_what_to_do():
    """The upgrade review: after an upgrade the parties refuse to evaluate releases trained under the old held-out
    rule (held_out_changed); the summary names the reason and the next step."""
    from server._summary import HELD_OUT_CHANGED_STEP, federated_evaluation_lines

    federated = {"parties": 0, "refused": [{"party_id": "hospital-a", "reason": "held_out_changed"}]}
    lines = federated_evaluation_lines(federated)
    assert "  hospital-a: not in the estimate (held_out_changed)" in lines
    assert f"  held_out_changed: {HELD_OUT_CHANGED_STEP}" in lines and "a new request-tag" in HELD_OUT_CHANGED_STEP
    other = federated_evaluation_lines({"parties": 0, "refused": [{"party_id": "b", "reason": "budget_exhausted"}]})
    assert not any("held_out_changed" in line for line in other)
