"""Issue 20, item 5 (ii-iv): hostile ledgers and models against the real ``edprf budget`` and
``edprf inspect`` commands, run as subprocesses: each ends (a hang guard of two minutes, not a
timing assertion), errors are one line without a traceback, and no raw control character from
a file reaches the terminal."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from edprf_core import EDPRFClassifier, load_embedded
from protocol import ReleasePolicy, build_global_model, decode_release, encode_release, release_pb2

pytestmark = pytest.mark.slow  # every case starts the real `edprf` command

EDPRF = Path(sys.executable).parent / "edprf"
ESCAPES = "\x1b[2J\x1b]0;owned\x07\r\u202eevil\u200b"
LEDGER_COLUMNS = (
    "id INTEGER PRIMARY KEY, request_id TEXT, kind TEXT, epsilon REAL, state TEXT, run_id TEXT, "
    "detail TEXT, payload BLOB, created_at REAL, updated_at REAL, epsilon_exact TEXT"
)


def _edprf(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(EDPRF), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        errors="surrogateescape",
    )


def _assert_terminal_safe(done: subprocess.CompletedProcess) -> None:
    text = done.stdout + done.stderr
    assert "Traceback" not in text
    assert all(c.isprintable() or c == "\n" for c in text), [c for c in text if not (c.isprintable() or c == "\n")]


def _assert_one_line_error(done: subprocess.CompletedProcess) -> None:
    _assert_terminal_safe(done)
    assert done.returncode == 1
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1, lines


def _ledger(path: Path, rows: list[tuple], columns: str = LEDGER_COLUMNS) -> Path:
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE spends ({columns})")
        db.executemany(
            "INSERT INTO spends (request_id, kind, epsilon, state, run_id, detail, created_at, "
            "updated_at, epsilon_exact) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    db.close()
    return path


def _row(**kw) -> tuple:
    values = {
        "request_id": "r1",
        "kind": "release",
        "epsilon": 0.5,
        "state": "released",
        "run_id": "run-1",
        "detail": "2 trees",
        "created_at": 1.7e9,
        "updated_at": 1.7e9,
        "epsilon_exact": "1/2",
        **kw,
    }
    return tuple(values.values())


def _recursive_view(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE VIEW spends AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
            "SELECT x AS id, 'r' || x AS request_id, 'release' AS kind, 1.0 AS epsilon, 'released' AS state, "
            "'' AS run_id, '' AS detail, 0.0 AS created_at, 0.0 AS updated_at FROM c"
        )
    db.close()
    return path


def _generated_blob(path: Path) -> Path:
    columns = LEDGER_COLUMNS.replace(
        "detail TEXT", "detail TEXT GENERATED ALWAYS AS (hex(zeroblob(100000000))) VIRTUAL"
    )
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE spends ({columns})")
        db.execute(
            "INSERT INTO spends (request_id, kind, epsilon, state, run_id, created_at, updated_at) "
            "VALUES ('r', 'release', 1.0, 'released', '', 0, 0)"
        )
    db.close()
    return path


HOSTILE_LEDGERS = {
    "a recursive view as spends": _recursive_view,
    "a generated column of 200 MB per row": _generated_blob,
    "an exact epsilon of a billion digits": lambda p: _ledger(p, [_row(epsilon_exact="1e999999999")]),
    "a huge denominator": lambda p: _ledger(p, [_row(epsilon_exact="1/" + "3" * 300)]),
    "an infinite epsilon": lambda p: _ledger(p, [_row(epsilon=float("inf"), epsilon_exact=None)]),
    "text where a number belongs": lambda p: _ledger(p, [_row(epsilon="abc", epsilon_exact=None)]),
    "a number where text belongs": lambda p: _ledger(p, [_row(kind=7)], LEDGER_COLUMNS.replace("kind TEXT", "kind")),
    "a blob where text belongs": lambda p: _ledger(p, [_row(run_id=b"\x1b[2J")]),
}


@pytest.mark.parametrize("make", HOSTILE_LEDGERS.values(), ids=HOSTILE_LEDGERS.keys())
def test_a_hostile_ledger_is_a_one_line_error_of_budget(tmp_path, make):
    path = make(tmp_path / "ledger.sqlite")
    assert path.stat().st_size <= 16 << 10
    _assert_one_line_error(_edprf("budget", path, "--cap", "2", "--max-seconds", "2"))


def test_a_date_past_year_9999_is_shown_as_seconds_not_refused(tmp_path):
    """A time stamp alone never makes a ledger unreadable (what the party counts does not depend on it): one past
    the calendar is shown as its number of seconds, on one line."""
    done = _edprf("budget", _ledger(tmp_path / "ledger.sqlite", [_row(created_at=1e300)]), "--cap", "2")
    assert done.returncode == 0, done.stderr
    assert "1e+300 s" in done.stdout
    _assert_terminal_safe(done)


@pytest.mark.parametrize("json_output", [False, True])
def test_control_characters_of_a_ledger_are_shown_escaped(tmp_path, json_output):
    path = _ledger(tmp_path / "ledger.sqlite", [_row(run_id=ESCAPES, detail=ESCAPES, request_id=ESCAPES)])
    done = _edprf("budget", path, "--cap", "2", *(["--json"] if json_output else []))
    assert done.returncode == 0, done.stderr
    _assert_terminal_safe(done)
    assert "\\x1b" in done.stdout or "\\u001b" in done.stdout


@pytest.mark.parametrize("make", list(HOSTILE_LEDGERS.values())[:3], ids=list(HOSTILE_LEDGERS)[:3])
def test_a_hostile_ledger_is_a_one_line_error_of_inspect(tmp_path, make):
    _assert_one_line_error(_edprf("inspect", make(tmp_path / "ledger.sqlite")))


# ------------------------------------------------------------------------ models
@pytest.fixture(scope="module")
def wall_model():
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=2, max_depth=3, n_bins=8, random_state=0)
        .fit(X.iloc[:400], y.iloc[:400])
        .forest_
    )
    release = decode_release(encode_release(forest, "hospital-a"), schema, ReleasePolicy())
    return schema, build_global_model(schema, [release], {"run_id": "r"})


def _with(model: bytes, **fields) -> bytes:
    message = release_pb2.GlobalModel.FromString(model)
    for name, value in fields.items():
        setattr(message, name, value)
    return message.SerializeToString(deterministic=True)


def _many_releases(model: bytes, n: int) -> bytes:
    message = release_pb2.GlobalModel.FromString(model)
    template = release_pb2.Release.FromString(message.releases[0].release)
    del message.releases[:]
    for i in range(n):
        template.party_id = f"p{i}"
        message.releases.append(release_pb2.SignedRelease(release=template.SerializeToString(deterministic=True)))
    return message.SerializeToString(deterministic=True)


def test_a_model_beyond_inspect_s_limits_is_refused_in_one_line_before_decoding(tmp_path, wall_model):
    _, model = wall_model
    path = tmp_path / "many.edprf"
    path.write_bytes(_many_releases(model, 1001))
    done = _edprf("inspect", path)
    _assert_one_line_error(done)
    assert "not checked" in done.stderr and "--max-releases" in done.stderr
    done = _edprf("inspect", path, "--max-n-trees", "10")
    assert "--max-n-trees" in done.stderr


def test_control_characters_of_a_model_are_shown_escaped(tmp_path, wall_model):
    schema, model = wall_model
    toml = schema.to_toml().replace(f'name = "{schema.name}"', 'name = "wall\\u001b[31m\\u202eevil\\u0007"', 1)
    hostile = _with(model, schema_toml=toml, manifest_json='{"run_id": "\\u001b]0;owned\\u0007\\u202e", "x": 1}')
    path = tmp_path / "escapes.edprf"
    path.write_bytes(hostile)
    done = _edprf("inspect", path)
    assert done.returncode == 0, done.stdout
    _assert_terminal_safe(done)
    assert "\\x1b" in done.stdout and "\\u202e" in done.stdout


def test_a_malformed_model_with_control_characters_is_one_escaped_line(tmp_path):
    path = tmp_path / "junk.edprf"
    path.write_bytes(b"\x1a\x05" + ESCAPES.encode() + b"\x00" * 8)
    _assert_one_line_error(_edprf("inspect", path))


def test_a_model_is_a_one_line_error_of_budget(tmp_path, wall_model):
    path = tmp_path / "model.edprf"
    path.write_bytes(_many_releases(wall_model[1], 3))
    _assert_one_line_error(_edprf("budget", path))
