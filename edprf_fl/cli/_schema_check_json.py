"""``edprf schema check SCHEMA DATA --json``: what the text report says, as one JSON object.

Review rev-auto A6: a script preparing a party's data had to read the text report to learn how many rows a schema
keeps and why rows were dropped.  Every value here is one the text report prints (the counts and findings of
:func:`edprf_core.check_data`'s report); nothing is computed anew.  The check is local: the object, like the text, names the party's
own files and counts of its own rows, and is never sent anywhere.  docs/reference/schema-check-json.md documents
every key.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edprf_core import Schema

__all__ = ["SCHEMA_CHECK_FORMAT", "check_json", "error_json"]

SCHEMA_CHECK_FORMAT = "edprf-schema-check/1"
"""The ``format`` of the object: a key removed, renamed or changed in meaning gets a new number, a key added does
not."""


def check_json(schema_path: str, data_path: str, schema: Schema, report: Any, exit_status: int) -> str:
    """The object for a check that ran: ``report`` is what :func:`edprf_core.check_data` returned, ``exit_status`` 0
    when it kept at least one row, 1 when none."""
    shown: dict[str, Any] = {
        "format": SCHEMA_CHECK_FORMAT,
        "schema": schema_path,
        "data": data_path,
        "schema_fingerprint": schema.fingerprint,
        "schema_drafted": bool(schema.is_draft),
        "draft_note": schema.draft_note if schema.is_draft else None,
        "rows_read": report.lines_read,
        "rows_kept": report.rows_kept,
        "lines_left_out": dict(sorted(report.lines_dropped.items())),
        "rows_dropped": [{"column": c, "rule": r, "count": n} for c, r, n in report.rows_dropped],
        "missing": [{"column": c, "count": n, "rule": r} for c, (n, r) in report.missing.items()],
        "clipped": [{"column": c, "count": n, "share": s} for c, (n, s) in report.clipped.items()],
        "findings": [{"level": level, "text": text} for level, text in report.findings()],
        "error": None,
        "exit_status": exit_status,
    }
    return json.dumps(shown, indent=2, ensure_ascii=False)


def error_json(error: str, exit_status: int) -> str:
    """The object for a check that could not run (a schema or data file that does not read)."""
    return json.dumps({"format": SCHEMA_CHECK_FORMAT, "error": error, "exit_status": exit_status}, indent=2)
