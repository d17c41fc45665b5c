"""The files a run's config names, checked before the coordinator sends any request.

A path that cannot be used (a typo in ``test-data-path``, a test file without the schema's columns, or with no row
the schema accepts) failed the run after every party had trained and spent its ε, when the coordinator came to
read it.  Each file is read here in full, as the run will read it, before a party is asked for anything.  Privacy
cost: none (the coordinator's own files; a party's data is never read here).
"""

from __future__ import annotations

from pathlib import Path

from edprf_core import Schema, load_schema
from edprf_core.count_text import count_text
from edprf_core.datasets import read_csv
from edprf_core.encoding import conforming_rows

from ._config import CoordinatorConfig

__all__ = ["check_run_files"]


def check_run_files(cfg: CoordinatorConfig) -> Schema:
    """The run's schema, after checking every file ``cfg`` names that the run will read.

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
    for key, path in (("test-data-path", cfg.test_file), ("validation-data-path", cfg.validation_file)):
        if path is None:
            continue
        try:
            X, y = read_csv(path, schema, labels="text")
        except (OSError, EOFError, ValueError) as exc:
            raise ValueError(f"{key}: {exc}") from None
        if not conforming_rows(X, y, schema)[0].any():
            raise ValueError(
                f"{key}: {path}: no row the schema accepts ({count_text(len(X), 'row')} read; the run would fail "
                "on it after the parties spent their epsilon)"
            )
    if cfg.keys_dir and not Path(cfg.keys_dir).is_dir():
        raise ValueError(f"keys-dir: {cfg.keys_dir} is not a directory")
    return schema
