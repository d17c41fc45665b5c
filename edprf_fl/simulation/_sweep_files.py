"""A sweep's files read back: ``sweep.csv`` as typed rows, the sweep's record ``sweep.json``, and what a resumed sweep
keeps or removes of its output directory.

``edprf sweep --resume`` and ``edprf sweep-report`` read a sweep's rows from its ``sweep.csv`` (review rev-research
R3: a sweep stopped by Ctrl-C left a CSV that nothing read back); the record says which settings the rows were made
with, so that rows of different settings are never put in one table.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edprf_fl import Provenance

from ._settings import SettingsError, SimulationSettings
from ._sweep import PROVENANCE_COLUMNS, SWEEP_AXES, sweep_seeds

__all__ = [
    "SWEEP_CSV",
    "SWEEP_RECORD",
    "SweepRecord",
    "config_key",
    "drop_torn_last_row",
    "incomplete_last_line",
    "read_record",
    "read_sweep_rows",
    "settings_fingerprint",
    "sweep_lock",
    "torn_last_row",
    "unfinished_run_dirs",
    "write_record",
]

SWEEP_CSV = "sweep.csv"
"""A sweep's rows, one per finished run, in its output directory."""

SWEEP_RECORD = "sweep.json"
"""A sweep's record in its output directory: its settings, grid, seeds and provenance (:class:`SweepRecord`)."""

RECORD_FORMAT = "edprf-sweep-record/1"
"""What :data:`SWEEP_RECORD`'s ``format`` says: the layout of :meth:`SweepRecord.to_dict`."""

_TEXT_COLUMNS = frozenset(
    {
        "partition",
        "run_dir",
        "depths_used",
        "dataset",
        "brier_scale",
        "schema_fingerprint",
        "data_sha256",
        *PROVENANCE_COLUMNS,
    }
)
"""``sweep.csv`` columns read back as text whatever they hold (a git revision or a dataset's name may be digits)."""

SWEEP_LOCK = ".sweep.lock"
"""The lock file in a sweep's output directory (:func:`sweep_lock`): the pid and command of the process holding it."""

_INTEGER = re.compile(r"-?\d+")

UNCOMPARED_SETTINGS = frozenset({"engine", "seed", "seeded_noise", "evaluation_epsilon", "party_holdout"})
"""Settings a sweep's rows do not depend on (the engine: the two give the same trees under seeded noise), or that
every run of a sweep sets itself (its seed, seeded noise, no evaluation round, no hold-out)."""


def settings_fingerprint(base: SimulationSettings) -> str:
    """``sha256:<hex>`` of the settings a sweep's rows depend on beyond the grid (``n_bins``, ``leaf``, ``test_size``,
    ``sep``, ...): the base settings without the axes, the runs' own (:data:`UNCOMPARED_SETTINGS`) and the paths of
    the data and schema (their content is ``data_sha256`` and ``schema_fingerprint``).  In every ``sweep.csv`` row,
    so that rows copied without their ``sweep.json`` still show a mix of settings (review rev-research2 N8)."""
    import hashlib

    kept = {
        k: v
        for k, v in asdict(base).items()
        if k not in SWEEP_AXES and k not in UNCOMPARED_SETTINGS and k not in ("data", "schema")
    }
    text = json.dumps(kept, sort_keys=True, default=lambda v: list(v) if isinstance(v, (tuple, set)) else str(v))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


_RUN_DIR = re.compile(r"run-\d{4,}")
"""A run's directory in a sweep's output directory."""


def _typed(column: str, text: str) -> Any:
    """A ``sweep.csv`` cell as the sweep wrote it: ``""``, a bool, an int, a float (``nan`` too) or text."""
    if column in _TEXT_COLUMNS or text == "":
        return text
    if text in ("True", "False"):
        return text == "True"
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def read_sweep_rows(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """``sweep.csv``'s columns and rows, each cell typed back (:func:`_typed`): a float written as ``1.0`` reads
    as ``1.0``, so a table of the rows read back is the table of the rows written.

    Raises
    ------
    ValueError
        ``path`` is missing or holds no header line; a row with another number of fields than the header, or a last
        line cut off (no end of line: a sweep killed, or a disk filled, while it wrote the row), its line named
        (review rev-research2 N6).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file (a sweep writes its rows there as each run ends)")
    cut = incomplete_last_line(path)
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        columns = next(reader, [])
        if not columns:
            raise ValueError(f"{path}: empty, no header line (the sweep was stopped before its first run ended)")
        rows = []
        for cells in reader:
            if (why := _torn(columns, cells)) or reader.line_num == cut:
                last = fh.read() == ""  # edprf sweep --resume drops a torn last row only
                raise ValueError(
                    f"{path} line {reader.line_num}: an incomplete row ({why or f'{len(cells)} of {len(columns)} fields'}"
                    + (", no end of line" if reader.line_num == cut else "")
                    + "): cut off while it was written (a sweep killed, or a full disk); "
                    + (
                        "edprf sweep --resume drops it and runs its run again"
                        if last
                        else "not the last row: an edited file? fix or remove that line"
                    )
                )
            rows.append({k: _typed(k, v) for k, v in zip(columns, cells)})
    return columns, rows


def incomplete_last_line(path: Path) -> int | None:
    """The number of ``sweep.csv``'s last line when it does not end with an end of line (cut off while written: every
    row is written whole with its end of line), else None."""
    data = Path(path).read_bytes()  # a row per run: small
    if not data or data.endswith(b"\n"):
        return None
    return data.count(b"\n") + 1


def torn_last_row(path: Path) -> tuple[int, str] | None:
    """``(line, why)`` when ``sweep.csv``'s last row is torn (a sweep killed, or a disk filled, while it wrote the
    row): its line does not end (:func:`incomplete_last_line`), or it holds another number of fields than the
    header, or its ``seed`` is not an integer (review rev-s64 F11: such a row was kept in the table and its run run
    again beside it); None when the last row is whole, or there is no row."""
    path = Path(path)
    if (line := incomplete_last_line(path)) is not None:
        return (line, "no end of line") if line > 1 else None  # a cut-off header: no row finished
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        columns = next(reader, [])
        last: list[str] | None = None
        start = 0
        while True:
            first_line = reader.line_num + 1
            cells = next(reader, None)
            if cells is None:
                break
            last, start = cells, first_line
    why = _torn(columns, last) if last is not None else ""
    return (start, why) if why else None


def _torn(columns: Sequence[str], cells: Sequence[str]) -> str:
    """Why a row of ``sweep.csv`` cannot be a whole row, or ``""``."""
    if len(cells) != len(columns):
        return f"{len(cells)} of {len(columns)} fields"
    if "seed" in columns and not _INTEGER.fullmatch(seed := cells[list(columns).index("seed")]):
        return f"seed {seed!r}, not an integer"
    return ""


def drop_torn_last_row(path: Path) -> tuple[int, str] | None:
    """Cut ``sweep.csv``'s last row off when it is torn (:func:`torn_last_row`), so that its run runs again and the
    next row starts on a line of its own; ``(line, why)`` of the row dropped, or None."""
    torn = torn_last_row(path)
    if torn is None:
        return None
    data = Path(path).read_bytes()
    end = 0
    for _ in range(torn[0] - 1):  # the start of the row's first line
        end = data.index(b"\n", end) + 1
    with Path(path).open("r+b") as fh:
        fh.truncate(end)
        fh.flush()
        os.fsync(fh.fileno())
    return torn


def config_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A row's (or a configuration's) values of the axes, :data:`SWEEP_AXES` in order (``""`` where it has none)."""
    return tuple(row.get(axis, "") for axis in SWEEP_AXES)


def unfinished_run_dirs(out: Path, rows: Iterable[Mapping[str, Any]]) -> list[Path]:
    """The ``run-NNNN`` directories of ``out`` that no row of ``rows`` names: runs an interruption stopped before
    their row was written (half written: a model and report.json, often no simulation.json)."""
    finished = {str(r.get("run_dir", "")) for r in rows}
    return sorted(d for d in Path(out).glob("run-*") if _RUN_DIR.fullmatch(d.name) and d.name not in finished)


@dataclass(frozen=True)
class SweepRecord:
    """What a sweep was asked: its settings apart from the grid, the grid's axes, its seeds, and who asked.

    Parameters
    ----------
    settings : mapping
        The base settings (:class:`SimulationSettings`' fields but the axes), paths absolute, as JSON values.
    axes : mapping of str to list
        Each axis' values as the grid took them (an axis not swept: the base settings' value alone).
    seeds, seed_start : int
        The runs' seeds: ``seed_start .. seed_start + seeds - 1``.
    provenance : Provenance
        The code and the command that started the sweep.
    data_sha256, schema_fingerprint : str or None
        The data the runs read, by content (:func:`data_identity`); None in a record written before they were
        recorded (review rev-research2 N1, N2).
    """

    settings: Mapping[str, Any]
    axes: Mapping[str, list[Any]]
    seeds: int
    seed_start: int
    provenance: Provenance
    format: str = field(default=RECORD_FORMAT)
    data_sha256: str | None = None
    schema_fingerprint: str | None = None

    def __post_init__(self) -> None:
        if self.format != RECORD_FORMAT:
            raise ValueError(f"format: expected {RECORD_FORMAT!r}, got {self.format!r}")
        if set(self.axes) != set(SWEEP_AXES):
            raise ValueError(f"axes: expected {', '.join(SWEEP_AXES)}, got {', '.join(self.axes)}")
        sweep_seeds(self.seeds, self.seed_start)  # SettingsError when out of range

    @classmethod
    def of(
        cls,
        base: SimulationSettings,
        values: Mapping[str, Sequence[Any] | None],
        seeds: int,
        seed_start: int,
        provenance: Provenance,
        data: tuple[str, str] | None = None,
    ) -> SweepRecord:
        """The record of a sweep of ``base`` over ``values`` (:func:`sweep_grid`'s arguments); ``data``: the
        :func:`data_identity` of its data."""
        from dataclasses import replace

        from ._sweep import _RESEARCH_RUN

        # what the runs used (review rev-research2 N12: seeded noise, no evaluation round, no hold-out), not the
        # base settings' defaults; each run's seed is in seeds and seed_start
        used = asdict(replace(base, **_RESEARCH_RUN))
        settings = {k: v for k, v in used.items() if k not in SWEEP_AXES and k != "seed"}
        for name in ("data", "schema"):  # a resume from another directory names the same files
            if settings[name] is not None:
                settings[name] = str(Path(settings[name]).resolve())
        settings["shuffled_label_parties"] = list(settings["shuffled_label_parties"])
        axes = {axis: list(values.get(axis) or [getattr(base, axis)]) for axis in SWEEP_AXES}
        data_sha256, fingerprint = data if data is not None else (None, None)
        return cls(settings, axes, seeds, seed_start, provenance, RECORD_FORMAT, data_sha256, fingerprint)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepRecord:
        """The inverse of :meth:`to_dict`."""
        return cls(
            dict(data["settings"]),
            {k: list(v) for k, v in data["axes"].items()},
            data["seeds"],
            data["seed_start"],
            Provenance.from_dict(data["provenance"]),
            data["format"],
            data.get("data_sha256"),
            data.get("schema_fingerprint"),
        )

    def to_dict(self) -> dict[str, Any]:
        """:data:`SWEEP_RECORD`'s content."""
        return {
            "format": self.format,
            "provenance": self.provenance.to_dict(),
            "settings": dict(self.settings),
            "axes": {k: list(v) for k, v in self.axes.items()},
            "seeds": self.seeds,
            "seed_start": self.seed_start,
            "data_sha256": self.data_sha256,
            "schema_fingerprint": self.schema_fingerprint,
        }

    def setting_differences(self, other: SweepRecord) -> list[tuple[str, Any, Any]]:
        """The settings (not the grid) whose values differ: ``(name, self's, other's)``, the runs' own settings
        (:data:`UNCOMPARED_SETTINGS`) left out; the paths of the data and schema too when both records identify
        them by content (:meth:`data_differences` compares them: the same data at another path is the same data)."""
        names = dict.fromkeys([*self.settings, *other.settings])
        by_content = self.data_sha256 and other.data_sha256 and self.schema_fingerprint and other.schema_fingerprint
        skipped = UNCOMPARED_SETTINGS | ({"data", "schema"} if by_content else set())
        return [
            (name, self.settings.get(name), other.settings.get(name))
            for name in names
            if name not in skipped and self.settings.get(name) != other.settings.get(name)
        ]

    def data_differences(self, other: SweepRecord) -> list[tuple[str, Any, Any]]:
        """``data_sha256`` and ``schema_fingerprint`` where both records hold one and they differ."""
        return [
            (name, getattr(self, name), getattr(other, name))
            for name in ("data_sha256", "schema_fingerprint")
            if getattr(self, name) and getattr(other, name) and getattr(self, name) != getattr(other, name)
        ]

    def grid_differences(self, other: SweepRecord) -> list[tuple[str, Any, Any]]:
        """The axes, then ``seeds`` and ``seed_start``, whose values differ: ``(name, self's, other's)``."""
        differ = [(a, self.axes[a], other.axes[a]) for a in SWEEP_AXES if self.axes[a] != other.axes[a]]
        return differ + [
            (name, getattr(self, name), getattr(other, name))
            for name in ("seeds", "seed_start")
            if getattr(self, name) != getattr(other, name)
        ]


def write_record(out: Path, record: SweepRecord) -> Path:
    """Write ``out/sweep.json`` (readable by its owner only, as a run's simulation.json), atomically: a stop while
    ``edprf sweep --resume`` rewrites it (the data at a new path) leaves the old record or the new one, never a
    part."""
    from protocol import OWNER_ONLY_FILE, save_atomic

    text = json.dumps(record.to_dict(), indent=2) + "\n"
    return save_atomic(Path(out) / SWEEP_RECORD, text.encode("utf-8"), mode=OWNER_ONLY_FILE)


def read_record(out: Path) -> SweepRecord | None:
    """``out/sweep.json``, or None when there is none (a sweep written before the record existed).

    Raises
    ------
    ValueError
        The file is not a sweep record this version reads.
    """
    path = Path(out) / SWEEP_RECORD
    if not path.is_file():
        return None
    try:
        return SweepRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, SettingsError) as exc:
        raise ValueError(f"{path}: not a sweep record this edprf reads ({exc})") from None


@contextmanager
def sweep_lock(out: Path, command: str = "") -> Iterator[Path]:
    """Hold ``out``'s lock (an exclusive ``flock`` on ``out/.sweep.lock``, not waited for) while the block runs: one
    sweep, resume or report writes in a directory at a time (review rev-research2 N3: a ``--resume`` beside a live
    sweep removed its running run, and both ran the same runs into the same directories and ledgers).

    The file keeps the holder's pid and ``command`` for the message of the process refused; the lock goes with the
    process (closing the file, or its end however it ends), so a killed sweep leaves no stale lock.

    Raises
    ------
    ValueError
        Another process holds the lock (its pid and command named).
    """
    from edprf_fl import hold_directory

    def refusal(who: str) -> str:
        return (
            f"{out} is in use by another edprf ({who}): a second sweep, resume or report there would mix their "
            "runs and files; wait for it to end (or stop it), then run this again"
        )

    with hold_directory(out, SWEEP_LOCK, refusal, command) as path:
        yield path
