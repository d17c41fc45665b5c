"""The files a run's config names, checked before the coordinator sends any request.

A path that cannot be used (a typo in ``test-data-path``, a test file without the schema's columns, or with no row
the schema accepts) failed the run after every party had trained and spent its ε, when the coordinator came to
read it.  Each file is read here in full, as the run will read it, before a party is asked for anything.  Privacy
cost: none (the coordinator's own files; a party's data is never read here).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from edprf_core import Schema, load_schema
from edprf_core.count_text import count_text
from edprf_core.datasets import read_csv
from edprf_core.encoding import conforming_rows

from ._config import CoordinatorConfig

__all__ = ["RunFiles", "check_run_files"]

log = logging.getLogger("edprf.coordinator")


@dataclass(frozen=True)
class RunFiles:
    """What the run reads of its own files, read once before any request: the schema, and the rows of the test
    and validation files that every schema rule accepts (None: no such file)."""

    schema: Schema
    test: tuple[pd.DataFrame, pd.Series] | None = None
    validation: tuple[pd.DataFrame, pd.Series] | None = None


def check_run_files(cfg: CoordinatorConfig) -> RunFiles:
    """The run's schema and its test and validation rows, after checking every file ``cfg`` names that the run
    will read.  The run uses these rows, not a second read of the files (which could have changed by then).

    Raises
    ------
    ValueError
        A file cannot be used, with the run-config key that names it: the schema cannot be read, the test or
        validation file cannot be read or holds no row the schema accepts, ``keys-dir`` is not a directory.
    """
    try:
        schema = load_schema(cfg.schema_file)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{'schema-path' if cfg.schema_path else 'sim-dir'}: {exc}") from None
    rows = {}
    for key, path in (("test-data-path", cfg.test_file), ("validation-data-path", cfg.validation_file)):
        if path is not None:
            rows[key] = _conforming_rows(key, path, schema)
    if cfg.keys_dir and not Path(cfg.keys_dir).is_dir():
        raise ValueError(f"keys-dir: {cfg.keys_dir} is not a directory")
    return RunFiles(schema, rows.get("test-data-path"), rows.get("validation-data-path"))


def _conforming_rows(key: str, path: Path, schema: Schema, *, header: bool = True) -> tuple[pd.DataFrame, pd.Series]:
    """The rows of the coordinator's file at ``path`` that every schema rule accepts (the parties' per-record
    filter; each rule a row breaks is logged once); at least one."""
    try:
        X, y = read_csv(path, schema, header=header, labels="text")
    except (OSError, EOFError, ValueError) as exc:
        raise ValueError(f"{key}: {exc}") from None
    keep, problems = conforming_rows(X, y, schema)
    if not keep.any():
        raise ValueError(
            f"{key}: {path}: no row the schema accepts ({count_text(len(X), 'row')} read; the run would fail "
            "on it after the parties spent their epsilon)"
        )
    for note in problems:
        log.warning("%s: %s; those rows are left out", key, note)
    return X[keep], y[keep]
