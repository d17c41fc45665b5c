"""The end of ``edprf run`` and ``edprf consortium`` for scripts: ``--json``'s object and ``--fail-on-refusal``'s exit.

Review rev-auto A6, A7: both commands printed Flower's log lines and their own summary interleaved on standard
output, the run directory (``report.json``) and the run id to resume with appeared only in that text, and a run in
which a party refused exited 0 with the refusal only in ``report.json``.  With ``--json`` the command ends with one
JSON object on standard output (:data:`RUN_SUMMARY_FORMAT`, docs/reference/run-summary-json.md), everything else
going to standard error; ``--fail-on-refusal`` makes a completed run in which a party refused or was silent exit
:data:`REFUSAL_STATUS`.  Each party's refusal is logged at WARNING either way.

Everything here reads ``report.json`` as the coordinator wrote it (``edprf-run-report/3``); nothing a party released
is read or changed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ._terminal_text import terminal_safe

__all__ = [
    "REFUSAL_STATUS",
    "RUN_SUMMARY_FORMAT",
    "SILENT_STATUSES",
    "json_output",
    "print_summary",
    "refusal_status",
    "run_report",
    "run_summary",
    "unheard_parties",
    "warn_refusals",
]

RUN_SUMMARY_FORMAT = "edprf-run-summary/1"
"""The ``format`` of ``--json``'s object: a key removed, renamed or changed in meaning gets a new number."""

REFUSAL_STATUS = 6
"""Exit status of ``run`` and ``consortium`` with ``--fail-on-refusal`` for a run that completed while at least one
party refused or was silent (review rev-auto A7)."""

SILENT_STATUSES = frozenset({"refused", "no_reply"})
"""A party's ``status`` in ``report.json`` that ``--fail-on-refusal`` counts: it refused the request, or sent
nothing within ``round-timeout``."""

_log = logging.getLogger("edprf.run")


def run_report(output_dir: str | Path | None, run_id: str | None, submitted: float | None = None) -> Path | None:
    """``output_dir``/report.json when this run wrote it, else None.

    Parameters
    ----------
    output_dir : str or Path or None
        The run's output directory (a relative one is taken from the working directory).
    run_id : str or None
        The run's Flower id: the report is this run's when its ``run_id`` is this one.  None (not known): when the
        file was written at or after ``submitted``.
    submitted : float, optional
        When the run was submitted (``time.time()``); used only without ``run_id``.

    Returns
    -------
    Path or None
        None when there is no such file, it cannot be read as a JSON object, or it is an earlier run's (a run refused
        before it wrote anything leaves an earlier run's report in place).
    """
    if output_dir is None or str(output_dir) == "":
        return None
    path = Path(output_dir) / "report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        written = path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict):
        return None
    if run_id is not None:
        return path if str(report.get("run_id", "")) == str(run_id) else None
    return path if submitted is None or written >= submitted - 1 else None


def _read(path: Path | None) -> dict[str, Any]:
    """The report at ``path`` ({} for None or a file that can no longer be read)."""
    if path is None:
        return {}
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def _parties(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in report.get("parties") or [] if isinstance(p, dict)]


def _absent(report: dict[str, Any]) -> list[str]:
    """``absent_parties`` (None, unknown, as none)."""
    absent = report.get("absent_parties")
    return [str(p) for p in absent] if isinstance(absent, list) else []


def _name(party: dict[str, Any]) -> str:
    return terminal_safe(party.get("party_id") or f"node {party.get('node_id')}", 100)


def unheard_parties(report: dict[str, Any]) -> list[str]:
    """Who refused or was silent, as ``report.json`` says: each party whose ``status`` is in :data:`SILENT_STATUSES`,
    and each registered party in ``absent_parties`` (no reply at all), one line each."""
    lines = [
        f"{_name(p)}: {p.get('status')}" + (f" ({terminal_safe(p['reason'], 100)})" if p.get("reason") else "")
        for p in _parties(report)
        if p.get("status") in SILENT_STATUSES
    ]
    lines += [f"{terminal_safe(party, 100)}: absent (registered, not heard from)" for party in _absent(report)]
    return lines


def warn_refusals(report_path: Path | None) -> None:
    """Log at WARNING each party of the report at ``report_path`` that refused or was silent (:func:`unheard_parties`),
    with its message: the run's other lines are INFO, and alerting reads WARNING (review rev-auto A7)."""
    report = _read(report_path)
    for party in _parties(report):
        if party.get("status") in SILENT_STATUSES:
            _log.warning(
                "run %s: %s %s the request (%s)%s",
                report.get("run_id", "?"),
                _name(party),
                "refused" if party.get("status") == "refused" else "did not answer",
                terminal_safe(party.get("reason") or "no reason given", 100),
                f": {terminal_safe(party['message'])}" if party.get("message") else "",
            )
    for party in _absent(report):
        _log.warning("run %s: %s (registered) was not heard from", report.get("run_id", "?"), terminal_safe(party, 100))


def refusal_status(code: int, report_path: Path | None, fail_on_refusal: bool) -> tuple[int, str | None]:
    """The exit status with ``--fail-on-refusal`` (``fail_on_refusal``) applied to ``code``, and the line to say.

    Only a completed run (``code`` 0) changes: :data:`REFUSAL_STATUS` when its report names a party that refused or
    was silent; 1 when the report of the run cannot be read here (``--fail-on-refusal`` cannot tell, and says so
    rather than exit 0).  Without the flag, ``code`` as it is.
    """
    if not fail_on_refusal or code != 0:
        return code, None
    if report_path is None:
        return 1, (
            "the run completed, but its report.json could not be read here, so --fail-on-refusal cannot tell whether "
            "every party answered: give an output-dir this host can read (the coordinator's), or run without the flag"
        )
    unheard = unheard_parties(_read(report_path))
    if unheard:
        return REFUSAL_STATUS, (
            f"the run completed without {len(unheard)} of its parties (--fail-on-refusal): " + "; ".join(unheard)
        )
    return code, None


def run_summary(
    *,
    status: str,
    run_id: str | int | None,
    request_tag: str | None,
    output_dir: str | Path | None,
    report_path: Path | None,
    exit_status: int,
    error: str | None = None,
) -> dict[str, Any]:
    """``--json``'s object (docs/reference/run-summary-json.md).

    Parameters
    ----------
    status : str
        ``completed``, ``failed``, ``stopped`` (a signal) or ``refused`` (no run was submitted).
    run_id : str or int or None
        Flower's run id; None when none was assigned.
    request_tag : str or None
        The run config's ``request-tag`` ("" or None: none; the run id then names the run's requests).
    output_dir : str or Path or None
        The run's output directory, as the run config gives it.
    report_path : Path or None
        This run's ``report.json`` (:func:`run_report`); its parties are copied as written.
    exit_status : int
        The command's exit status.
    error : str, optional
        Why the run did not complete (or why the status is not 0); the report's ``failure`` when there is no other.
    """
    report = _read(report_path)
    run = None if run_id is None else str(run_id)
    tag = request_tag or None
    resume = (tag or run) if status in ("failed", "stopped") and run is not None else None
    return {
        "format": RUN_SUMMARY_FORMAT,
        "status": status,
        "exit_status": exit_status,
        "run_id": run,
        "request_tag": tag,
        "resume_request_tag": resume,
        "output_dir": None if output_dir is None or str(output_dir) == "" else str(output_dir),
        "report": None if report_path is None else str(report_path),
        "parties": [
            {
                "party_id": p.get("party_id") or None,
                "node_id": None if p.get("node_id") is None else str(p["node_id"]),
                "status": p.get("status"),
                "reason": p.get("reason") or None,
            }
            for p in _parties(report)
        ],
        "absent_parties": report.get("absent_parties", []) if report else [],
        "error": error or report.get("failure") or None,
    }


def print_summary(summary: dict[str, Any], out: IO[str] | None = None) -> None:
    """``summary`` as one line of JSON on ``out`` (standard output)."""
    out = out or sys.stdout
    out.write(json.dumps(summary) + "\n")
    out.flush()


@contextlib.contextmanager
def json_output(enabled: bool) -> Iterator[IO[str]]:
    """While the block runs, with ``enabled`` (``--json``), what the command prints goes to standard error; yields
    the standard output the object is written to (the real one)."""
    real = sys.stdout
    if not enabled:
        yield real
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield real
