"""Run control of a deployed coordinator: never replace a run's output, say what was newly spent, fail loudly.

- An output directory that already holds a run (its ``report.json`` or ``global-model.edprf``) is
  refused before any request is sent, so nothing is spent, unless the run config says
  ``overwrite = true`` (or names a new ``output-dir``).  Re-running the same command therefore no
  longer replaces a model silently, nor spends every party's evaluation ε again.
- A release the party resent for a reused ``request-tag`` was made (and charged) by an earlier
  run: its ``run_id`` is not this run's.  The report marks such parties ``resumed_from_run``; the
  guarantee separates what this run newly charged from what the earlier run had charged; and the
  evaluation round is skipped when every accepted release is resumed (the model is the one the
  earlier run built and evaluated), unless ``evaluate-resumed = true``.
- A run holds its output directory while it runs (a claim file naming the run and its process): a
  second run sent to the same directory while the first is still running is refused before any
  request (both used to run, and the second's report replaced the first's model).  A claim left by
  a run whose process is gone (a crash) is taken over, so a resubmission after a crash works.

  "Holds" is an exclusive ``flock`` on the claim file, kept (its descriptor open) for the run's lifetime; the
  file's JSON says who holds it, for the refusal's text only.  Judging a claim stale from its pid, then unlinking
  it and creating a new one, let two coordinators in: both judged one crashed run's claim stale, the first
  replaced it, the second unlinked the first's fresh claim and made its own (both ran, both spent the parties'
  epsilon, the second's report replaced the first's model); a claim created but not yet written read as nobody's
  and was taken over; and a pid reused after a container restart counted as running forever.  ``flock`` is
  atomic (of two processes asking, the kernel grants one), and the kernel drops it when its process dies,
  however it dies: so on this host "running" is "locked" and "stale" is "not locked", whatever pid the file
  names.  A claim is taken over by locking the existing file and rewriting it under the lock, never by unlinking
  it (another process may hold or be about to lock that very file); only its holder removes it, when it lets
  go.  ``flock`` does not reach other hosts: a claim naming another host name still counts as running.
- A directory the run created and left empty (a run stopped or failed before it wrote anything: Ctrl-C
  during ``edprf run`` left ``runs/<time>/`` behind, empty) is removed when the run lets it go; a
  directory that existed before, or holds anything, is kept.
- A failed run raises :class:`RunFailed` from the ServerApp once the report (with its ``failure``
  text) is saved and the summary logged: Flower 1.41 then marks the run ``finished:failed`` with
  the text as its details (``flwr ls``), and ``edprf run`` exits non-zero.

Privacy: none of this reads party data; resumed releases are post-processing of what was
released before (no new ε), and a refusal here happens before any request.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from edprf_core import EDPRFError
from edprf_core.count_text import count_text
from protocol import OWNER_ONLY_FILE, make_owner_only_dirs

from ._config import CoordinatorConfig
from ._outcomes import EvaluationSkip, PartyStatus
from ._report import RunReport
from ._spend_store import EVALUATED_EXACTLY, EVALUATED_WITH_NOISE

__all__ = [
    "OutputDirInUse",
    "RunFailed",
    "absent_text",
    "claim_output_dir",
    "failure_text",
    "release_output_dir",
    "resumed_evaluation_skip",
    "too_few_connected_text",
]

_RUN_FILES = ("report.json", "global-model.edprf")
CLAIM_NAME = ".edprf-run.claim"
"""The file a running run holds in its output directory (locked with ``flock`` while the run runs):
``{"run": id, "pid": n, "host": name, "created": bool}`` (``created``: the run made the directory, which it removes
on release if it is still empty)."""


class OutputDirInUse(EDPRFError, ValueError):
    """The output directory holds another run's report or model."""


class RunFailed(EDPRFError, RuntimeError):
    """The run ended without a usable model; the message is the report's ``failure`` text."""


def claim_output_dir(cfg: CoordinatorConfig, run_id: str = "") -> Path:
    """The run's output directory, refused when it holds a run and ``overwrite`` is false, or when another
    run still running holds it (whatever ``overwrite`` says); then this run holds it
    (:func:`release_output_dir` lets it go).

    With ``overwrite`` the earlier run's report and model are removed first, so that a failure of
    this run cannot leave the old model looking like its result.
    """
    out = Path(cfg.output_dir)
    _hold(out, run_id)
    try:
        _refuse_a_finished_run(out, cfg)
    except BaseException:
        release_output_dir(out)
        raise
    return out


def release_output_dir(out: Path) -> None:
    """Let go of ``out`` (held by :func:`claim_output_dir` in this process); nothing if it is not held.

    A directory the claim created is removed if nothing is left in it (``rmdir``: never one with content).
    """
    claim = out / CLAIM_NAME
    with _HELD_LOCK:
        held = _HELD.pop(os.path.realpath(claim), None)
    if held is None:
        return
    try:
        if _same_file(held.fd, claim):  # removed while still locked: a process that opened it sees it went
            claim.unlink(missing_ok=True)
    finally:
        os.close(held.fd)  # drops the lock
    if held.created:
        with contextlib.suppress(OSError):  # not empty (the run wrote something), or already gone
            out.rmdir()


@dataclass(frozen=True)
class _Claim:
    """A claim this process holds: the open descriptor that keeps the claim file locked, and whether the run's
    directory was created for it (removed on release if still empty)."""

    fd: int
    created: bool


_HELD: dict[str, _Claim] = {}
"""The claims this process holds, by the claim file's real path."""
_HELD_LOCK = threading.Lock()
_ATTEMPTS = 5
"""Opens of the claim file before giving up: one is retried only when its holder removed it (released, with the
directory it had made if left empty) between this process's making the directory, its open and its lock."""


def _forget_claims_in_child() -> None:
    """A forked child shares its parent's locked descriptors: it closes its copies (the parent keeps the lock) so
    that a child outliving the run does not keep the directory held, and it holds nothing to release."""
    for held in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(held.fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_claims_in_child)


def _hold(out: Path, run_id: str) -> None:
    """Lock ``out``'s claim file for this process and write who holds it; a claim no live process on this host
    locks (its run crashed) is taken over in place (and what it says of who created ``out`` is kept).

    A second claim of a directory this process already holds is refused too (a lock is held per open file).
    """
    created = False
    claim = out / CLAIM_NAME
    for _ in range(_ATTEMPTS):
        created = make_owner_only_dirs(out) or created
        try:
            fd = os.open(claim, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, OWNER_ONLY_FILE)
        except FileNotFoundError:  # its holder released it and removed the directory it had made (left empty)
            continue
        kept = False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live process holds it (perhaps not yet written: then it names nobody)
                raise _in_use(out, claim, _holder(fd), elsewhere=False) from None
            if not _same_file(fd, claim):  # its holder released it (removed it) before this process locked it
                continue
            holder = _holder(fd)
            if _elsewhere(holder):
                raise _in_use(out, claim, holder, elsewhere=True)
            created = created or holder.get("created") is True
            mine = json.dumps(
                {"run": run_id, "pid": os.getpid(), "host": socket.gethostname(), "created": created}
            ).encode()
            os.ftruncate(fd, 0)  # a claim taken over: rewritten in place, under the lock
            os.pwrite(fd, mine, 0)
            with _HELD_LOCK:
                _HELD[os.path.realpath(claim)] = _Claim(fd, created)
            kept = True
            return
        finally:
            if not kept:
                os.close(fd)
    raise OutputDirInUse(f"output-dir {out}: another run claimed it at the same moment; nothing was sent")


def _in_use(out: Path, claim: Path, holder: dict, *, elsewhere: bool) -> OutputDirInUse:
    return OutputDirInUse(
        f"output-dir {out} is being written by run {holder.get('run') or '?'} (process "
        f"{holder.get('pid') or '?'} on {holder.get('host') or socket.gethostname()}), "
        + (
            "another host name, whose processes this one cannot see (another machine, or a container "
            "before a restart), so it counts as running"
            if elsewhere
            else "still running"
        )
        + f"; nothing was sent to the parties. Give another output-dir, or wait for that run to end (if "
        f"no run uses it, delete {claim})"
    )


def _same_file(fd: int, claim: Path) -> bool:
    """Whether ``fd`` is the file at ``claim`` now (not one its holder removed)."""
    try:
        there = os.stat(claim)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _holder(fd: int) -> dict:
    """What the claim file open at ``fd`` says of its holder; ``{}`` if it says nothing readable."""
    try:
        holder = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _elsewhere(holder: dict) -> bool:
    """Whether the claim names a process on another host name (whose lock, if any, this host cannot see)."""
    pid = holder.get("pid")
    return isinstance(pid, int) and pid > 0 and holder.get("host") != socket.gethostname()


def _refuse_a_finished_run(out: Path, cfg: CoordinatorConfig) -> None:
    found = [out / name for name in _RUN_FILES if (out / name).exists()]
    if found and not cfg.overwrite:
        raise OutputDirInUse(
            f"output-dir {out} already holds a run ({', '.join(p.name for p in found)}); nothing "
            "was sent to the parties. Give a new output-dir, or overwrite=true to replace it"
        )
    for path in found:
        path.unlink()


def resumed_evaluation_skip(
    report: RunReport, cfg: CoordinatorConfig, evaluated_runs: Mapping[str, str] | None = None
) -> dict | None:
    """The evaluation round's entry when it is skipped because every accepted release is resumed, else None.

    ``evaluated_runs``: those of the earlier runs whose evaluation round the spend record holds, with how
    (:meth:`server._spend_store.SpendStore.evaluated_runs`: noised counts or exact metrics); None when there is no
    spend record to ask.  The message says "was evaluated then", and how, only of earlier runs the record says
    evaluated (review rev-day2 U7); of one it holds nothing of, that the record holds no evaluation of it and why that
    may be, without claiming either (review rev-s65 F5: a coordinator before 0.2.12 recorded no exact-metrics
    evaluation).  What ``evaluate-resumed=true`` would cost is said by this run's mode: each party spends
    evaluation-epsilon, or, with exact metrics, nothing, and the answers are NOT DP.
    """
    accepted = report.accepted
    if cfg.evaluate_resumed or not accepted or not all(p.resumed_from_run for p in accepted):
        return None
    runs = sorted({p.resumed_from_run for p in accepted})
    cost = (
        "exact metrics: NOT DP, no party spends epsilon"
        if cfg.exact_metrics
        else "each party spends evaluation-epsilon"
    )
    asks = f"evaluate-resumed=true asks for it ({cost})"
    if evaluated_runs is None:
        then = (
            "the model is theirs; it was evaluated then only if that run's report.json holds a federated "
            f"evaluation, and it was not evaluated again; {asks}"
        )
    elif all(run in evaluated_runs for run in runs):
        how = sorted({evaluated_runs[run] for run in runs})
        with_what = {EVALUATED_WITH_NOISE: "noised counts", EVALUATED_EXACTLY: "exact metrics (NOT DP)"}
        then = (
            f"the model is theirs and was evaluated then with {' or '.join(with_what.get(h, h) for h in how)}, so "
            "it was not evaluated again (evaluate-resumed=true asks anyway)"
        )
    else:
        missing = [run for run in runs if run not in evaluated_runs]
        plural = len(missing) > 1
        then = (
            f"the spend record holds no evaluation of the interrupted run{'s' if plural else ''} "
            f"({', '.join(missing)}): {'they' if plural else 'it'} stopped before the evaluation round, unless its "
            "record could not be written or a coordinator before 0.2.12 evaluated with exact metrics, which it did "
            f"not record (a report.json, if written, says); {asks}"
        )
    return {
        "skipped": EvaluationSkip.RESUMED_RELEASES,
        "message": f"every release was resent from run(s) {', '.join(runs)} (request-tag {cfg.request_tag!r}); {then}",
    }


def failure_text(report: RunReport, min_parties: int, step: str = "") -> str:
    """Why a run without enough valid releases failed: the count (``step``: where it fell short, e.g. "kept after the
    quality checks"), and each party's reason."""
    reasons = [
        f"{p.party_id or f'node {p.node_id}'}: {p.status} ({p.reason})"
        for p in report.parties
        if p.status != PartyStatus.ACCEPTED
    ]
    # a run short of connected parties fails before its requests (too_few_connected_text): here every party
    # missing from the count was asked, and has a reason
    return (
        f"{count_text(len(report.accepted), 'valid release')}{f' {step}' if step else ''}, min-parties is "
        f"{min_parties}; no model saved"
        + (f". {'; '.join(reasons[:20])}" if reasons else "")
        + (f"; and {len(reasons) - 20} more" if len(reasons) > 20 else "")
        + (f". {absent_text(report.absent_parties)}" if report.absent_parties else "")
    )


def too_few_connected_text(
    connected: int, min_parties: int, waited: float, missing: list[str] | None = None, unknown: str = ""
) -> str:
    """Why a run stopped before its requests: fewer parties connected than ``min-parties``, so none was asked.

    ``missing``: the registered parties known not to have connected (:mod:`server._connected_parties`), named;
    ``unknown``: why they are not known (:meth:`~server._connected_parties.ConnectedParties.unknown_text`).
    """
    shown = ""
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return (
        f"{connected} of min-parties {min_parties} connected within node-wait-timeout ({waited:g} s)"
        + (f"; not connected: {shown}" if shown else "")
        + "; no request was sent, so no party spent epsilon. "
        + (f"{unknown}. " if unknown and not shown else "")
        + ("Start those parties' SuperNodes" if shown else "Start the missing parties' SuperNodes")
        + " (or give them longer: node-wait-timeout) and submit again"
    )


def absent_text(parties: list[str]) -> str:
    """The registered parties (``keys-dir``) that no reply named, and what that can mean.

    A reply names a party by a signed release (accepted or not) or by the ``party-id`` of a refusal, which is
    the refusing node's unverified claim: a diagnostic for the consortium's operators, not a check.
    """
    shown = ", ".join(parties[:20]) + (f" and {len(parties) - 20} more" if len(parties) > 20 else "")
    return (
        f"Registered parties no reply named: {shown} (a SuperNode that did not connect, did not reply in time, "
        "failed before naming its party, or sent a release no registered key signed: see the node lines and "
        "that party's log)"
    )
