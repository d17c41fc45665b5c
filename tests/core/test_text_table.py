"""The per-line reader: each line's fate depends on that line only; cells stay text."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from edprf_core import DataValidationError, EDPRFClassifier, example_schema, load_embedded
from edprf_core.datasets import read_csv
from edprf_core.tables import MAX_LINE_CHARS, read_table

SCHEMA = example_schema("heart_disease_cleveland")
COLUMNS = [*SCHEMA.feature_names, SCHEMA.label.column]
ROW = "63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0"


def _write(tmp_path, lines, header=True, name="d.csv", sep=","):
    text = "\n".join(([sep.join(COLUMNS)] if header else []) + lines) + "\n"
    path = tmp_path / name
    path.write_text(text.replace(",", sep) if sep != "," else text)
    return path


def test_cells_stay_text_and_rows_keep_their_line_numbers(tmp_path):
    path = _write(tmp_path, [ROW, "", ROW.replace("63.0", "?")])
    table = read_table(path, SCHEMA)
    assert table.X.shape == (2, 13) and all(pd.api.types.is_string_dtype(t) for t in table.X.dtypes)
    assert all(isinstance(v, str) for v in table.X.to_numpy().ravel())  # no cell parsed or typed here
    assert table.X["age"].tolist() == ["63.0", "?"] and table.y.tolist() == ["0", "0"]
    assert table.line_numbers.tolist() == [2, 4] and table.dropped == []


def test_malformed_lines_are_dropped_alone(tmp_path):
    bad = ['"63.0,1.0', ROW + ",extra", ROW.rsplit(",", 1)[0], 'x"y,' + ROW.split(",", 1)[1]]
    path = _write(tmp_path, [ROW, *bad, ROW])
    table = read_table(path, SCHEMA)
    assert len(table.X) == 3  # the stray quote inside an unquoted field is kept as text
    assert [n.split(":")[0] for n in table.dropped] == ["line 3", "line 4", "line 5"]
    assert all("63.0" not in n for n in table.dropped)


def test_an_open_quote_never_swallows_the_next_lines(tmp_path):
    path = _write(tmp_path, [ROW, '1,"2', ROW, ROW])
    assert len(read_table(path, SCHEMA).X) == 3


def test_overlong_lines_are_dropped(tmp_path):
    path = _write(tmp_path, [ROW, "9" * (MAX_LINE_CHARS + 1) + ROW[4:]])
    table = read_table(path, SCHEMA)
    assert len(table.X) == 1 and "longer than" in table.dropped[0]


def test_headerless_semicolon_and_gzip(tmp_path):
    path = _write(tmp_path, [ROW, ROW], header=False, sep=";")
    table = read_table(path, SCHEMA, sep=";", header=False)
    assert list(table.X.columns) == list(SCHEMA.feature_names) and len(table.X) == 2
    gz = tmp_path / "d.csv.gz"
    gz.write_bytes(gzip.compress(_write(tmp_path, [ROW]).read_bytes()))
    assert len(read_table(gz, SCHEMA).X) == 1


def test_a_leading_bom_and_crlf_are_tolerated(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (",".join(COLUMNS) + "\r\n" + ROW + "\r\n").encode())
    assert len(read_table(path, SCHEMA).X) == 1


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ("age,sex", "label column 'num' is missing"),
        (",".join(COLUMNS[1:]), "missing columns"),
        (",".join([*COLUMNS, "secret"]), "unknown columns"),
    ],
)
def test_only_the_header_can_refuse_the_file(tmp_path, header, match):
    path = tmp_path / "h.csv"
    path.write_text(header + "\n" + ROW + "\n")
    with pytest.raises(DataValidationError, match=match):
        read_table(path, SCHEMA)


def test_missing_file_and_bad_separator(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_table(tmp_path / "nope.csv", SCHEMA)
    with pytest.raises(ValueError, match="sep must be one character"):
        read_table(_write(tmp_path, [ROW]), SCHEMA, sep='"')


def test_numeric_categories_read_cell_by_cell(tmp_path):
    """The heart file writes codes as floats ('4.0'); the schema declares integers."""
    path = _write(tmp_path, [ROW, ROW.replace(",6.0,0", ",7.0,1")])
    X, y = read_csv(path, SCHEMA)
    clf = EDPRFClassifier(SCHEMA, epsilon=1.0, max_depth=2, random_state=0).fit(X, y)
    assert clf.score(X, y) in (0.0, 0.5, 1.0)


def test_score_refuses_labels_outside_the_declared_classes():
    X, y, schema = load_embedded("wall_robot_navigation")
    clf = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, random_state=0).fit(X[:200], y[:200])
    assert 0.0 <= clf.score(X[:50], y[:50]) <= 1.0
    with pytest.raises(DataValidationError, match="not in the declared classes"):
        clf.score(X[:3], pd.Series(["Forward", "Backward", "Move-Forward"]))


def test_huge_cells_cost_their_length_not_rows_times_length():
    """A fixed-width string array would need rows x 10^7 characters (gigabytes)."""
    X, y, schema = load_embedded("bank_marketing")
    X = X.iloc[:20_000].copy()
    X.iloc[0, X.columns.get_loc("job")] = "x" * 10_000_000
    from edprf_core.encoding import conforming_rows

    keep, notes = conforming_rows(X, y.iloc[:20_000], schema)
    assert not keep[0] and keep[1:].all() and "10000002 characters" not in " ".join(notes)


@pytest.mark.parametrize(
    ("cell", "code"),
    [
        ("7", 7),
        (" 7 ", 7),
        ("7.0", 7),
        ("1e309", None),
        ("inf", None),
        ("nan", None),
        ("", "missing"),
        ("?", "missing"),
        ("abc", None),
    ],
)
def test_continuous_cells_parse_alone(cell, code):
    from edprf_core._encoding import _as_float

    x, missing = _as_float(pd.Series([cell, "3"], dtype=object), "c", problems=[])
    assert x[1] == 3.0
    if code == "missing":
        assert missing[0]
    elif code is None:
        assert np.isnan(x[0]) and not missing[0]
    else:
        assert x[0] == code


def test_parquet_input_reads_the_same_rows(tmp_path):
    X, y, schema = load_embedded("wall_robot_navigation")
    path = tmp_path / "wall.parquet"
    X.iloc[:300].assign(Class=y.iloc[:300].to_numpy()).to_parquet(path)
    table = read_table(path, schema)
    assert len(table.X) == 300 and table.y.tolist() == y.iloc[:300].tolist()
    clf = EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0)
    assert clf.fit(table.X, table.y).score(table.X, table.y) == clf.fit(X[:300], y[:300]).score(X[:300], y[:300])


def test_a_quoted_header_of_another_table_is_counted_as_its_cells(tmp_path):
    """The first-line check split on the separator inside quotes: another table's quoted header counted
    '"visit' and 'site"' as two of its columns."""
    path = tmp_path / "other.csv"
    path.write_text('"visit, site","US1","US2"\n' + "a,1,2\n")
    with pytest.raises(DataValidationError, match=r"its first line names none of them \(3 fields,"):
        read_table(path, SCHEMA)


def test_parquet_column_names_with_a_comma_a_quote_or_a_trailing_space_and_an_upper_case_gz(tmp_path):
    """rev-data S3-7/8/9: a Parquet name holding a comma was split in two ("missing columns ['weight, kg']; the
    schema declares ['weight, kg']"); the streaming reader behind predict and evaluate raised KeyError on a name
    with a trailing space, which training reads stripped; DATA.CSV.GZ was read as raw gzip bytes."""
    pytest.importorskip("pyarrow.parquet")
    from edprf_core import ContinuousFeature, LabelSpec, Schema
    from edprf_core.tables import check_table_header, stream_rows

    schema = Schema(
        features=(ContinuousFeature("weight, kg", 0, 200), ContinuousFeature('say "hi"', 0, 10)),
        label=LabelSpec("y", ("a", "b")),
    )
    frame = pd.DataFrame({"weight, kg ": [70.0, 80.0], 'say "hi"': [1.0, 2.0], "y": ["a", "b"]})
    frame.to_parquet(tmp_path / "names.parquet", index=False)
    check_table_header(tmp_path / "names.parquet", schema)
    table = read_table(tmp_path / "names.parquet", schema)
    assert table.X.columns.tolist() == ["weight, kg", 'say "hi"'] and table.X["weight, kg"].tolist() == [70.0, 80.0]
    (chunk,) = stream_rows(tmp_path / "names.parquet", schema)
    assert chunk.frame.columns.tolist() == ["weight, kg", 'say "hi"', "y"] and chunk.frame["y"].tolist() == ["a", "b"]
    upper = tmp_path / "DATA.CSV.GZ"
    upper.write_bytes(gzip.compress(b"w,s,y\n70,1,a\n80,2,b\n"))
    plain = Schema(features=(ContinuousFeature("w", 0, 200), ContinuousFeature("s", 0, 10)), label=schema.label)
    check_table_header(upper, plain)
    assert read_table(upper, plain).y.tolist() == ["a", "b"]
    assert [c.frame["w"].tolist() for c in stream_rows(upper, plain)] == [["70", "80"]]


def test_the_columns_read_without_a_schema_are_the_rows_a_party_keeps(tmp_path):
    """read_named_columns (for `edprf schema draft`, before any schema exists) keeps the rows read_columns keeps,
    names the columns from the header (stripped) or from ``names``, and refuses a header naming a column twice."""
    from edprf_core.tables import read_columns, read_named_columns

    long_row = ROW.replace("63.0", "6" * (MAX_LINE_CHARS + 1))
    lines = [ROW, long_row, "1,2", '63.0,"1.0', ROW.replace("63.0", "70.0"), ";;;"]
    path = _write(tmp_path, lines)
    path.write_text(path.read_text().replace("age", " age ", 1))  # a name the party reads stripped
    named = read_named_columns(path)
    assert list(named.columns) == COLUMNS
    assert named.columns["age"].to_pylist() == ["63.0", "70.0"]
    assert list(named.line_numbers) == [2, 6]
    assert named.dropped == [
        f"line 3: longer than {MAX_LINE_CHARS} characters",
        "line 4: 2 fields, expected 14",
        "line 5: unbalanced quotes",
        "line 7: 1 fields, expected 14",
    ]
    by_schema = read_columns(path, SCHEMA)
    assert by_schema.dropped == named.dropped and list(by_schema.line_numbers) == list(named.line_numbers)
    assert all(by_schema.columns[c].equals(named.columns[c]) for c in COLUMNS)
    headerless = _write(tmp_path, [ROW], header=False, name="h.csv")
    assert list(read_named_columns(headerless, COLUMNS).columns["num"].to_pylist()) == ["0"]
    twice = tmp_path / "twice.csv"
    twice.write_text("a, a,y\n1,2,3\n")
    with pytest.raises(ValueError, match="names a column twice"):
        read_named_columns(twice)
