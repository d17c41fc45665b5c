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
import json
import os
import socket
from pathlib import Path

from edprf_core import EDPRFError
from edprf_core.count_text import count_text
from protocol import OWNER_ONLY_FILE, make_owner_only_dirs

from ._config import CoordinatorConfig
from ._outcomes import EvaluationSkip, PartyStatus
from ._report import RunReport

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
"""The file a running run holds in its output directory: ``{"run": id, "pid": n, "host": name, "created": bool}``
(``created``: the run made the directory, which it removes on release if it is still empty)."""


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
    holder = _holder(claim)
    if holder.get("pid") == os.getpid():
        claim.unlink(missing_ok=True)
        if holder.get("created") is True:
            with contextlib.suppress(OSError):  # not empty (the run wrote something), or already gone
                out.rmdir()


def _hold(out: Path, run_id: str) -> None:
    """Create ``out``'s claim file, exclusively; a claim whose process is gone is replaced (and what it says of
    who created ``out`` is kept)."""
    created = make_owner_only_dirs(out)
    claim = out / CLAIM_NAME
    for _ in range(2):
        mine = json.dumps(
            {"run": run_id, "pid": os.getpid(), "host": socket.gethostname(), "created": created}
        ).encode()
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, OWNER_ONLY_FILE)
        except FileExistsError:
            holder = _holder(claim)
            if _running(holder):
                elsewhere = holder.get("host") != socket.gethostname()
                raise OutputDirInUse(
                    f"output-dir {out} is being written by run {holder.get('run') or '?'} (process "
                    f"{holder.get('pid')} on {holder.get('host')}), "
                    + (
                        "another host name, whose processes this one cannot see (another machine, or a container "
                        "before a restart), so it counts as running"
                        if elsewhere
                        else "still running"
                    )
                    + f"; nothing was sent to the parties. Give another output-dir, or wait for that run to end (if "
                    f"no run uses it, delete {claim})"
                ) from None
            created = created or holder.get("created") is True
            claim.unlink(missing_ok=True)  # left by a run whose process is gone (a crash)
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(mine)
        return
    raise OutputDirInUse(f"output-dir {out}: another run claimed it at the same moment; nothing was sent")


def _holder(claim: Path) -> dict:
    try:
        holder = json.loads(claim.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _running(holder: dict) -> bool:
    """Whether the claim's process still runs (on this host; a claim from another host counts as running)."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():  # this process's own claim is not another run
        return False
    if holder.get("host") != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)  # signal 0: is it there? (PermissionError: there, another user's)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _refuse_a_finished_run(out: Path, cfg: CoordinatorConfig) -> None:
    found = [out / name for name in _RUN_FILES if (out / name).exists()]
    if found and not cfg.overwrite:
        raise OutputDirInUse(
            f"output-dir {out} already holds a run ({', '.join(p.name for p in found)}); nothing "
            "was sent to the parties. Give a new output-dir, or overwrite=true to replace it"
        )
    for path in found:
        path.unlink()


def resumed_evaluation_skip(report: RunReport, cfg: CoordinatorConfig) -> dict | None:
    """The evaluation round's entry when it is skipped because every accepted release is resumed, else None."""
    accepted = report.accepted
    if cfg.evaluate_resumed or not accepted or not all(p.resumed_from_run for p in accepted):
        return None
    runs = sorted({p.resumed_from_run for p in accepted})
    return {
        "skipped": EvaluationSkip.RESUMED_RELEASES,
        "message": (
            f"every release was resent from run(s) {', '.join(runs)} (request-tag {cfg.request_tag!r}); "
            "the model is theirs and was evaluated then, so no party was asked to spend evaluation "
            "epsilon again (evaluate-resumed=true asks anyway)"
        ),
    }


def failure_text(report: RunReport, min_parties: int) -> str:
    """Why a run without enough valid releases failed: the count, and each party's reason."""
    reasons = [
        f"{p.party_id or f'node {p.node_id}'}: {p.status} ({p.reason})"
        for p in report.parties
        if p.status != PartyStatus.ACCEPTED
    ]
    # a run short of connected parties fails before its requests (too_few_connected_text): here every party
    # missing from the count was asked, and has a reason
    return (
        f"{count_text(len(report.accepted), 'valid release')}, min-parties is {min_parties}; no model saved"
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
