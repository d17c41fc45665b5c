"""Progress of `edprf predict` and `edprf evaluate` on stderr: a start line, throttled counts, a done line.

Progress never reaches stdout, where predict's CSV (``-o -``) and evaluate's report go: stdout with a count
line after every chunk is byte for byte stdout with none.  The throttle is tested on an injected clock
(:mod:`edprf_fl.simulation._progress`), never on wall time.
"""

from __future__ import annotations

import re

import pytest

from edprf_core import example_schema
from edprf_fl.cli import main
from edprf_fl.cli._model_args import described_when_read
from edprf_fl.simulation import _progress
from edprf_fl.simulation._progress import Throttle

SCHEMA = example_schema("bank_marketing")
GOOD = "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown"
ROWS = 5


def _data(tmp_path, label: bool = False):
    header = ",".join([*SCHEMA.feature_names, *([SCHEMA.label.column] if label else [])])
    lines = [GOOD + (f",{'yes' if k % 2 else 'no'}" if label else "") for k in range(ROWS)]
    path = tmp_path / ("labelled.csv" if label else "in.csv")
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


def _run(capsys, monkeypatch, argv: list[str], every: float) -> tuple[str, list[str]]:
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", every)
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err.splitlines()


def _trees(model: dict) -> int:
    from protocol import load_global_model

    return load_global_model(model["model"]).forest.n_trees


def _progress_lines(err: list[str]) -> list[str]:
    return [line for line in err if line.startswith(("scoring the rows of ", "      "))]


def test_predict_says_its_stages_in_order_on_stderr_and_stdout_is_unchanged(tmp_path, bank_model, capsys, monkeypatch):
    data = _data(tmp_path)
    argv = ["predict", str(bank_model["model"]), str(data), "-o", "-", "--chunk-rows", "2"]
    out, err = _run(capsys, monkeypatch, argv, every=0.0)  # a count line after every chunk of 2 rows
    start = f"scoring the rows of {data} ({data.stat().st_size} bytes) with {_trees(bank_model)} trees, 2 rows at a time ..."
    assert _progress_lines(err)[:4] == [start, "      2 rows so far", "      4 rows so far", "      5 rows so far"], err
    assert re.fullmatch(r"      5 rows in \d+\.\d s", _progress_lines(err)[4]), err
    # the banner (provenance, guarantee) first, then the stages, then the summary
    assert err.index(start) > max(k for k, line in enumerate(err) if line.startswith("guarantee:"))
    assert err[err.index(start) + 5].startswith("predicted 5 rows (5 ok, ")
    quiet_out, quiet_err = _run(capsys, monkeypatch, argv, every=1e9)  # the throttle says no count line
    assert [line for line in _progress_lines(quiet_err) if "so far" in line] == []
    assert out == quiet_out and out.startswith("line,status,detail,p_no,p_yes,predicted,support\n")
    assert len(out.splitlines()) == ROWS + 1 and "rows" not in out
    # the file written by -o holds the same bytes as stdout: the results are unchanged by progress
    target = tmp_path / "out.csv"
    _run(capsys, monkeypatch, [*argv[:3], "-o", str(target), "--chunk-rows", "2"], every=0.0)
    assert target.read_text(encoding="utf-8") == out


def test_evaluate_says_its_stages_in_order_on_stderr_and_its_report_is_unchanged(
    tmp_path, bank_model, capsys, monkeypatch
):
    data = _data(tmp_path, label=True)
    argv = ["evaluate", str(bank_model["model"]), str(data), "--positive-class", "yes"]
    out, err = _run(capsys, monkeypatch, argv, every=0.0)
    start = f"scoring the rows of {data} ({data.stat().st_size} bytes) with {_trees(bank_model)} trees ..."
    said = _progress_lines(err)
    assert said[:2] == [start, "      5 rows so far"] and re.fullmatch(r"      5 rows in \d+\.\d s", said[2]), err
    quiet_out, _ = _run(capsys, monkeypatch, argv, every=1e9)
    assert out == quiet_out and out.startswith(f"evaluated 5 rows of {data}")
    assert "so far" not in out and "scoring the rows" not in out


def test_the_throttle_says_a_count_line_at_most_every_five_seconds_of_its_clock():
    now = [100.0]
    said: list[str] = []
    built: list[int] = []
    throttle = Throttle(said.append, clock=lambda: now[0])  # started at 100
    for k, t in enumerate([101.0, 104.9, 105.0, 107.0, 109.99, 110.0, 130.0], start=1):
        now[0] = t

        def text(k=k):
            built.append(k)
            return f"done {k}"

        throttle.tick(text)
    # 105.0 is 5 s after the start, 110.0 5 s after that line, 130.0 20 s after: the others are too soon
    assert said == ["done 3", "done 6", "done 7"] and built == [3, 6, 7]  # the text is built only when said
    assert throttle.elapsed() == 30.0


def test_the_chunk_counts_follow_the_throttle_and_the_done_line_follows_the_last_chunk(monkeypatch):
    from edprf_fl.cli import _model_args

    said: list[str] = []
    monkeypatch.setattr(_model_args, "say", said.append)
    monkeypatch.setattr(_model_args, "describe", lambda provenance: said.append("banner"))

    class Chunk:
        def __init__(self, n):
            self.line_numbers = list(range(n))

    ticks = iter([0.0, 3.0, 6.0, 8.0, 12.0, 13.0])  # the start, after each of 4 chunks, the done line
    chunks = described_when_read([Chunk(10), Chunk(10), Chunk(10), Chunk(7)], None, "start", clock=lambda: next(ticks))
    for _ in chunks:
        pass
    assert said == ["banner", "start", "      20 rows so far", "      37 rows so far", "      37 rows in 13 s"]
    said.clear()
    assert list(described_when_read([], None, "start")) == [] and said == []  # no row: no banner, no progress


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.04, "0.0 s"), (9.94, "9.9 s"), (12.4, "12 s"), (59.4, "59 s"), (185, "3 min 05 s")]
)
def test_durations_read_as_people_read_them(seconds, text):
    assert _progress.seconds_text(seconds) == text


@pytest.mark.parametrize(
    ("size", "text"), [(812, "812 bytes"), (4_600_000, "4.6 MB"), (192_536_369, "192.5 MB"), (1_925_390_809, "1.9 GB")]
)
def test_sizes_read_as_file_managers_show_them(size, text):
    assert _progress.size_text(size) == text


def test_explain_counts_the_rows_read_while_it_looks_for_a_row_and_its_explanation_is_unchanged(
    tmp_path, bank_model, capsys, monkeypatch
):
    data = _data(tmp_path)
    argv = ["explain", str(bank_model["model"]), str(data), "--row", "4"]
    out, err = _run(capsys, monkeypatch, argv, every=0.0)  # a count line after every chunk read past the row
    assert err == []  # the row is in the first chunk: found before any count
    quiet_out, _ = _run(capsys, monkeypatch, argv, every=1e9)
    assert out == quiet_out and out.startswith(f"model: {bank_model['model']} (")
    monkeypatch.setattr(_progress, "PROGRESS_EVERY", 0.0)
    capsys.readouterr()
    assert main([*argv[:3], "--row", "99"]) == 1  # past the end: every chunk read, then the error
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"      {ROWS} rows read so far, looking for row 99" and "no row 99" in err[1], err
