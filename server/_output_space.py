"""Whether the coordinator's output directory can hold a run's model and report, judged before any party spends.

A party's epsilon is charged in its ledger when it releases, whatever happens to the release afterwards.  A
coordinator whose disk fills up while it writes the global model has had every party spend for a run that leaves
nothing (measured: a 1 MB tmpfs, three parties released, ``OSError: [Errno 28]`` writing the model).  So the
run checks the free space of its output directory against the largest model and report the run can produce
(:func:`server._size_bounds.model_bound` and :func:`~server._size_bounds.report_bound`, linear in the parties
whatever they send) before the training round, and fails with a clear line when it is short.  The check reads
the coordinator's own disk and public parameters only; no party's data enters it.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from ._size_bounds import model_bound, report_bound

__all__ = ["output_space_problem", "report_unwritten_text", "write_failed_text", "write_failure_text"]


def output_space_problem(out_dir: Path, n_parties: int, max_release_bytes: int, schema_bytes: int) -> str | None:
    """Why ``out_dir`` cannot hold the model and report of a run of ``n_parties`` parties; None when it can, or
    when its free space cannot be read (the writes will then say what is wrong).

    The need is the worst case: every party's release at ``max_release_bytes`` (the largest the run accepts), its
    entry in the model's manifest and in the report at their longest.
    """
    need = model_bound(n_parties, max_release_bytes, schema_bytes) + report_bound(n_parties)
    try:
        free = shutil.disk_usage(out_dir).free
    except OSError:
        return None
    if free >= need:
        return None
    return (
        f"the output directory {out_dir} has {_megabytes(free)} free; the model and report of "
        f"{n_parties} {'party' if n_parties == 1 else 'parties'} can take up to {_megabytes(need)} (releases of at "
        f"most {_megabytes(max_release_bytes)} each): free space there or write the run to a larger disk (output-dir), "
        "then rerun. No party was asked to spend anything"
    )


def write_failure_text(exc: BaseException) -> str | None:
    """``PATH: what`` for an error writing a file (a full disk, a quota, a read-only file system); None for any
    other error."""
    if not isinstance(exc, OSError) or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG):
        return None
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or type(exc).__name__}"


def write_failed_text(written: str, request_tag: str) -> str:
    """The failure of a run whose files could not be written after the releases arrived (``written``: what
    :func:`write_failure_text` says), with what the operator can do: the parties charged their ledgers for the
    releases they sent; a run with a ``request-tag`` is resubmitted without new epsilon (each party resends the
    release its ledger kept, deploy/README.md section 4)."""
    head = f"the coordinator could not write its files after the releases arrived ({written}): the parties that "
    if request_tag:
        return (
            head + "released have spent their epsilon for it; make room, then resubmit with the same parameters, "
            f"request-tag {request_tag!r} and a new output-dir: each party resends the release it made, with no "
            "new epsilon"
        )
    return (
        head + "released have spent their epsilon for this run; make room in output-dir before the next run (a run "
        "with a request-tag can be resubmitted without new epsilon: deploy/README.md section 4)"
    )


def report_unwritten_text(written: str, model_path: str) -> str:
    """The failure of a run whose model was built but whose ``report.json`` could not be written (``written``: what
    :func:`write_failure_text` says): the run's summary in the coordinator's log is its only record."""
    model = f"the model is saved at {model_path}, but " if model_path else ""
    return (
        f"{model}the run's report could not be written ({written}): the parties spent their epsilon for this run "
        "(training, and any evaluation round); the run's summary, logged with this line, is its only record: keep "
        "it, and make room in output-dir before the next run"
    )


def _megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:,.1f} MB"
