"""One sweep table from the rows of one or more sweeps: checked compatible, each (configuration, seed) once, with
the provenance of every set of rows at the top of ``sweep.md``.

What ``edprf sweep-report`` writes (review rev-research R3: a ``--seed-start`` extension of a sweep had no way to
become one table with the earlier sweep), and what ``edprf sweep`` writes at the end, a resumed sweep's included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edprf_fl import Provenance

from ._settings import SettingsError
from ._sweep import PROVENANCE_COLUMNS, SWEEP_AXES, sweep_table
from ._sweep_files import SWEEP_CSV, SweepRecord, config_key, read_record, read_sweep_rows

__all__ = [
    "SweepRows",
    "code_texts",
    "combine_sweeps",
    "grid_size",
    "interrupted_lines",
    "mixed_code_error",
    "provenance_lines",
    "read_sweep",
    "sweep_configs",
    "sweep_markdown",
    "sweep_notes",
]

SHARED_COLUMNS = ("dataset", "schema_fingerprint", "rows_read", "rows_left_out", "seeded_noise")
"""``sweep.csv`` columns that every row of one table must share: the same data, read under the same schema (its
fingerprint), the same rows of it, seeded research runs all."""


@dataclass(frozen=True)
class SweepRows:
    """The rows of one sweep's output directory.

    Parameters
    ----------
    directory : Path
        The sweep's ``--output``.
    columns : tuple of str
        ``sweep.csv``'s header.
    rows : tuple of dict
        Its rows, typed (:func:`read_sweep_rows`).
    record : SweepRecord or None
        Its ``sweep.json`` (None: a sweep written before the record existed; its settings beyond the grid unknown).
    """

    directory: Path
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    record: SweepRecord | None


def read_sweep(directory: Path) -> SweepRows:
    """A sweep's ``sweep.csv`` and ``sweep.json``.

    Raises
    ------
    ValueError
        No ``sweep.csv`` there, one without rows, or an unreadable ``sweep.json``.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: no such directory")
    columns, rows = read_sweep_rows(directory / SWEEP_CSV)
    if not rows:
        raise ValueError(f"{directory / SWEEP_CSV}: no rows (no run of that sweep finished)")
    after = "schema_fingerprint"
    for name in ("data_sha256", "settings_fingerprint"):  # rows of an older edprf: "" (not recorded)
        if name not in columns and after in columns:
            columns.insert(columns.index(after) + 1, name)
            rows = [_with_column(row, after, name, "") for row in rows]
        after = name
    return SweepRows(directory, tuple(columns), tuple(rows), read_record(directory))


def _with_column(row: Mapping[str, Any], after: str, name: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, cell in row.items():
        out[key] = cell
        if key == after:
            out[name] = value
    return out


def combine_sweeps(sweeps: Sequence[SweepRows]) -> list[dict[str, Any]]:
    """The rows of ``sweeps`` as one table's: checked compatible, each (configuration, seed) once, ordered by
    configuration (in order of first appearance, the sweeps taken in the order given), then by seed.

    Rows may hold different configurations and different seeds (a ``--seed-start`` extension); they may not
    differ in anything else. A pair found twice is refused, not chosen between: two runs of one pair weigh that
    seed twice in a cell, and which to keep is the researcher's call (give each seed range once).

    Raises
    ------
    ValueError
        Columns that differ, a :data:`SHARED_COLUMNS` value that differs (named, with the values expected and
        got), or a (configuration, seed) pair in two rows.
    SettingsError
        Two sweeps' records (``sweep.json``) whose settings beyond the grid differ, the setting named
        (``{n_bins}``: the caller names it by its flag).
    """
    if not sweeps:
        raise ValueError("no sweep given")
    first = sweeps[0]
    for other in sweeps[1:]:
        _check_columns(first, other)
        if first.record is not None and other.record is not None:
            for name, ours, theirs in first.record.data_differences(other.record):
                raise ValueError(
                    f"{name}: expected {ours} (as in {first.directory / 'sweep.json'}), got {theirs} in "
                    f"{other.directory / 'sweep.json'}: rows of different data make no single table"
                )
            for name, ours, theirs in first.record.setting_differences(other.record):
                raise SettingsError(
                    "{" + name + "}: expected {ours!r} (as in {first}), got {theirs!r} in {other}: rows of different "
                    "settings make no single table",
                    ours=ours,
                    theirs=theirs,
                    first=str(first.directory / "sweep.json"),
                    other=str(other.directory / "sweep.json"),
                )
    expected = {c: (first.rows[0].get(c), first.directory) for c in SHARED_COLUMNS if c in first.columns}
    hashed = next(((s.directory, r["data_sha256"]) for s in sweeps for r in s.rows if r.get("data_sha256")), None)
    if hashed is not None:
        expected["data_sha256"] = (hashed[1], hashed[0])
    set_by = next(
        ((s.directory, r["settings_fingerprint"]) for s in sweeps for r in s.rows if r.get("settings_fingerprint")),
        None,
    )
    if set_by is not None:
        expected["settings_fingerprint"] = (set_by[1], set_by[0])
    unrecorded = [
        s.directory for s in sweeps if s.record is None and any(not r.get("settings_fingerprint") for r in s.rows)
    ]
    if unrecorded and len(sweeps) > 1:
        raise ValueError(
            f"{unrecorded[0]}: no sweep.json, and rows without settings_fingerprint (an older edprf's sweep, or its "
            "sweep.csv copied alone): its settings beyond the grid (--n-bins, --leaf, ...) cannot be compared with the "
            "others', and rows of different settings make no single table; copy its sweep.json beside its sweep.csv, "
            "or report it alone"
        )
    named_by_hash = bool(first.rows[0].get("data_sha256"))
    seen: dict[tuple[tuple[Any, ...], int], tuple[Path, str]] = {}
    for sweep in sweeps:
        for row in sweep.rows:
            for column, (value, source) in expected.items():
                if column in ("data_sha256", "settings_fingerprint") and not row.get(column):
                    continue  # rows of an older sweep: said in sweep.md (:func:`sweep_notes`), or its record compared
                if column == "dataset" and named_by_hash and row.get("data_sha256"):
                    continue  # the same bytes under another file name are the same data
                if row.get(column) != value:
                    what = (
                        "settings beyond the grid (compare their sweep.json)"
                        if column == "settings_fingerprint"
                        else "data"
                    )
                    raise ValueError(
                        f"{sweep.directory / SWEEP_CSV} ({row.get('run_dir', '?')}): expected {column} {value!r} "
                        f"(as in {source / SWEEP_CSV}), got {row.get(column)!r}: rows of different {what} make "
                        "no single table"
                    )
            pair = (config_key(row), row["seed"])
            if pair in seen:
                where, run = seen[pair]
                raise ValueError(
                    f"{_config_text(row)}, seed {row['seed']}: in {where / SWEEP_CSV} ({run}) and in "
                    f"{sweep.directory / SWEEP_CSV} ({row.get('run_dir', '?')}): each (configuration, seed) pair once "
                    "only (a --seed-start extension's seeds must not overlap the earlier sweep's)"
                )
            seen[pair] = (sweep.directory, str(row.get("run_dir", "?")))
    rows = [row for sweep in sweeps for row in sweep.rows]
    order = {key: i for i, key in enumerate(dict.fromkeys(config_key(r) for r in rows))}
    return sorted(rows, key=lambda r: (order[config_key(r)], r["seed"]))


def code_texts(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The versions of the code that made ``rows`` (``edprf-fl 0.2.10 (git 1609f2c)``), in order of first row."""
    return list(dict.fromkeys(_code_text(r.get("edprf_version", ""), r.get("git_describe", "")) for r in rows))


def _code_text(version: Any, revision: Any) -> str:
    if not version:
        return "a version not recorded"
    return f"edprf-fl {version}" + (f" (git {revision})" if revision else "")


def mixed_code_error(rows: Sequence[Mapping[str, Any]], where: str) -> str | None:
    """Why ``rows`` make no table without ``--allow-mixed-code`` (review rev-research2 N5): they come from more than
    one version or git revision of the code; None when from one."""
    codes = code_texts(rows)
    if len(codes) < 2:
        return None
    return (
        f"{where} come from {len(codes)} versions of the code ({'; '.join(codes)}): a table of them mixes what each "
        "computed (a -dirty tree may hold a changed algorithm); rerun the rows of one with the other's code, or give "
        "--allow-mixed-code (sweep.md then says so at its top)"
    )


def _mixed_code_line(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    codes = code_texts(rows)
    if len(codes) < 2:
        return []
    said = (
        f"WARNING: these rows come from {len(codes)} versions of the code ({'; '.join(codes)}), merged with "
        "--allow-mixed-code: the table mixes them (the provenance above says which rows each made)."
    )
    return [said]


def interrupted_lines(sweeps: Sequence[SweepRows]) -> list[str]:
    """``INTERRUPTED: DIR: 3 of 8 runs of its grid finished ...`` for each sweep whose rows are fewer than its record's
    grid holds (review rev-research2 N4: a report of an interrupted sweep lost its INTERRUPTED head)."""
    lines = []
    for sweep in sweeps:
        if sweep.record is None:
            continue
        total = grid_size(sweep.record.axes) * sweep.record.seeds
        if len(sweep.rows) < total:
            lines.append(
                f"INTERRUPTED: {sweep.directory}: {len(sweep.rows)} of the {total} runs of its grid finished "
                "(sweep.json); this table holds those only (edprf sweep --resume finishes it)."
            )
    return lines


def grid_size(axes: Mapping[str, Sequence[Any]]) -> int:
    """How many configurations a grid of ``axes`` has (an iid or column partition once, whatever the alphas)."""
    import itertools

    combos = itertools.product(*(axes[a] for a in SWEEP_AXES))
    return len(
        {tuple("" if a == "alpha" and c[2] != "dirichlet" else v for a, v in zip(SWEEP_AXES, c)) for c in combos}
    )


def sweep_notes(sweeps: Sequence[SweepRows]) -> list[str]:
    """What a table of ``sweeps``' rows could not check, or took as the same, for ``sweep.md``'s head: the same data
    (or schema) read from different paths, and rows whose data is not identified by content (sweeps from before
    ``data_sha256``)."""
    notes = _same_content_notes(sweeps)
    unhashed = [s.directory for s in sweeps if any(not r.get("data_sha256") for r in s.rows)]
    if not unhashed:
        return notes
    said = (
        f"NOTE: the rows of {', '.join(map(str, unhashed))} carry no hash of their data (sweep.csv: data_sha256; a "
        "sweep of an older edprf): their data could not be checked to be the other rows' (only the dataset's name, "
        "the schema fingerprint and the row counts were compared)."
    )
    return [*notes, said]


def _same_content_notes(sweeps: Sequence[SweepRows]) -> list[str]:
    """``NOTE: data read from 2 paths, same content ...`` when the sweeps' records name the data (or the schema) at
    different paths, each identified by content (review rev-research2 N15: a copy, or a sweep run on another
    machine, was refused by its path; :func:`combine_sweeps` compares the content, and the table says where each
    sweep read it)."""
    recorded = [
        (s.directory, s.record) for s in sweeps if s.record and s.record.data_sha256 and s.record.schema_fingerprint
    ]
    notes = []
    for name, content, what in (
        ("data", "data_sha256", "data read from {n} paths, same content"),
        ("schema", "schema_fingerprint", "schema read from {n} paths, same fingerprint"),
    ):
        paths: dict[str, list[str]] = {}
        for directory, record in recorded:
            if (path := record.settings.get(name)) is not None:
                paths.setdefault(str(path), []).append(str(directory))
        if len(paths) > 1:
            value = str(getattr(recorded[0][1], content))
            shown = "; ".join(f"{path} ({', '.join(dirs)})" for path, dirs in paths.items())
            notes.append(f"NOTE: {what.format(n=len(paths))} ({content} {value[:19]}...): {shown}.")
    return notes


def _check_columns(first: SweepRows, other: SweepRows) -> None:
    if other.columns == first.columns:
        return
    missing = [c for c in first.columns if c not in other.columns]
    extra = [c for c in other.columns if c not in first.columns]
    said = "; ".join(
        part
        for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"extra {', '.join(extra)}" if extra else "",
            "the same columns in another order" if not (missing or extra) else "",
        )
        if part
    )
    raise ValueError(
        f"{other.directory / SWEEP_CSV}: expected the columns of {first.directory / SWEEP_CSV}, got {said} (sweeps of "
        "different edprf versions write different columns: rerun the older one's seeds with this version)"
    )


def sweep_configs(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The configurations the rows hold, in order of first appearance (a configuration: its values of the axes)."""
    return [dict(zip(SWEEP_AXES, key)) for key in dict.fromkeys(config_key(r) for r in rows)]


def provenance_lines(
    rows: Sequence[Mapping[str, Any]], made_by: Provenance | None = None, sources: Sequence[Path] = ()
) -> list[str]:
    """The top of ``sweep.md``: for each set of rows one command wrote (``sweep.csv``'s :data:`PROVENANCE_COLUMNS`),
    how many runs and which seeds, the code and the command; then, given ``made_by``, the code and command that
    wrote this table (from the sweeps in ``sources``, when it was rebuilt from them)."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row.get(c, "")) for c in PROVENANCE_COLUMNS), []).append(row)
    lines = ["Provenance (sweep.csv: edprf_version, git_describe, command):"]
    for (version, revision, command), members in groups.items():
        seeds = sorted({r["seed"] for r in members})
        shown = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {_ranges_text(seeds)}"
        runs = f"{len(members)} run{'s' if len(members) != 1 else ''} ({shown})"
        if not version:
            lines.append(f"- {runs}: not recorded (rows written before sweep.csv recorded their code and command)")
            continue
        code = f"edprf-fl {version}" + (f" (git {revision})" if revision else "")
        lines.append(f"- {runs} by {code}: {_code_span(command)}")
    if made_by is not None:
        origin = f" from {', '.join(str(s) for s in sources)}" if sources else ""
        where = f" in {made_by.cwd}" if made_by.cwd else ""
        lines.append(f"- this table{origin} by {made_by.code_text}{where}: {_code_span(made_by.command)}")
    return lines


def sweep_markdown(
    rows: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, Any]],
    *,
    made_by: Provenance | None = None,
    sources: Sequence[Path] = (),
    head: str = "",
    notes: Sequence[str] = (),
) -> str:
    """``sweep.md``: ``head`` (an interrupted sweep's INTERRUPTED line), :func:`provenance_lines`, ``notes`` (what
    the table mixes or could not check, :func:`sweep_notes`), then the table (:func:`sweep_table`)."""
    parts = [head] if head else []
    notes = [*_mixed_code_line(rows), *notes]  # review rev-research2 N5: in the header, whichever command wrote it
    parts += ["\n".join(provenance_lines(rows, made_by, sources)), *notes, sweep_table(rows, configs)]
    return "\n\n".join(parts) + "\n"


def _ranges_text(values: Sequence[int]) -> str:
    """``0-3, 7``: sorted integers as runs of consecutive values."""
    spans: list[list[int]] = []
    for v in values:
        if spans and v == spans[-1][-1] + 1:
            spans[-1].append(v)
        else:
            spans.append([v])
    return ", ".join(str(s[0]) if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans)


def _code_span(text: str) -> str:
    """``text`` as a Markdown code span (between longer runs of backticks than it holds)."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _config_text(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {row[k]}" for k in SWEEP_AXES if row.get(k, "") != "")
