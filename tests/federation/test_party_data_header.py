"""A deployed party's data file without a header line: the node config's ``data-header=false``.

A user walkthrough found that a party could not read UCI's ``processed.cleveland.data`` (no header), while the
refusal in its log told it to "pass --no-header", a flag no party command has.
"""

from __future__ import annotations

import pandas as pd
import pytest
from flwr.common.config import parse_config_args

from client import Party, PartyPolicy, PartySetup, Refusal
from client._local_data import load_local_data
from edprf_core import load_embedded
from protocol import ReleasePolicy, build_global_model, decode_release
from protocol.messages import EvaluateRequest

from .test_party import _request

ROWS = 1500


@pytest.fixture
def files(tmp_path):
    """The same rows twice, with and without a header line, a schema and a policy."""
    X, y, schema = load_embedded("wall_robot_navigation")
    schema.save(tmp_path / "schema.toml")
    rows = X.iloc[:ROWS].assign(Class=y.iloc[:ROWS].to_numpy())
    rows.to_csv(tmp_path / "with-header.csv", index=False)
    rows.to_csv(tmp_path / "no-header.data", index=False, header=False)
    policy = PartyPolicy(
        party_id="hospital-a",
        lifetime_epsilon_cap=1.5,
        max_release_epsilon=1.0,
        max_evaluation_epsilon=0.2,
        schema_fingerprint=schema.fingerprint,
    )
    (tmp_path / "policy.toml").write_text(policy.to_toml())
    return tmp_path, schema


def _node_config(d, data: str, extra: str = "") -> str:
    return (
        f"data-path='{d / data}' schema-path='{d / 'schema.toml'}' policy-path='{d / 'policy.toml'}' "
        f"ledger-path='{d / 'ledger.sqlite'}'{extra}"
    )


def _setup(d, data: str, extra: str = "") -> PartySetup:
    """The party's set-up from its node config, parsed by Flower as a SuperNode parses ``--node-config``."""
    return PartySetup.from_configs(parse_config_args([_node_config(d, data, extra)]), {})


@pytest.mark.parametrize("value", ["false", "'false'"])
def test_a_party_with_data_header_false_trains_and_evaluates_on_a_headerless_file(files, value):
    d, schema = files
    setup = _setup(d, "no-header.data", f" data-header={value}")
    assert setup.data_header is False
    party = Party(setup)
    release = decode_release(party.train(_request(schema, epsilon=0.5)), schema, ReleasePolicy())
    model = build_global_model(schema, [release], {"run_id": "run1"})
    metrics = party.evaluate(model, EvaluateRequest("run1/1/evaluate", "run1", 0.2, False))
    assert metrics["epsilon"] == 0.2 and metrics["exact"] == 0.0
    assert [(e.kind, e.state) for e in party.ledger.entries()] == [("release", "released"), ("evaluation", "released")]
    data = party._data()
    assert len(data.y_train) + len(data.y_holdout) == ROWS  # every line a record: none read as a header


def test_the_same_rows_with_and_without_a_header_give_the_same_split(files):
    """The hold-out split is a keyed hash of each row's own cells: reading without a header changes no cell."""
    d, _ = files
    with_header = Party(_setup(d, "with-header.csv", " data-header=true"))._data()
    without = Party(_setup(d, "no-header.data", " data-header=false"))._data()  # the same ledger: the same salt
    for name in ("X_train", "y_train", "X_holdout", "y_holdout"):
        a, b = getattr(with_header, name), getattr(without, name)
        (pd.testing.assert_frame_equal if isinstance(a, pd.DataFrame) else pd.testing.assert_series_equal)(a, b)
    assert 0 < len(without.y_holdout) < ROWS // 2


def test_load_local_data_reads_a_headerless_file_as_the_schema_s_columns(files):
    d, schema = files
    salt = "ab" * 16
    a = load_local_data(d / "with-header.csv", schema, 0.3, salt)
    b = load_local_data(d / "no-header.data", schema, 0.3, salt, header=False)
    pd.testing.assert_frame_equal(a.X_holdout, b.X_holdout)
    pd.testing.assert_series_equal(a.y_train, b.y_train)


@pytest.mark.parametrize(
    ("extra", "shown"),
    [(" data-header='no'", "'no'"), (" data-header=0", "0"), (" data-header='False'", "'False'")],
)
def test_a_data_header_other_than_true_or_false_is_refused(files, extra, shown):
    d, _ = files
    with pytest.raises(ValueError, match=f"^node config data-header: expected true or false, got {shown}$"):
        _setup(d, "no-header.data", extra)
    with pytest.raises(ValueError, match="node config data-header: expected true or false, got 'false'"):
        PartySetup(d / "no-header.data", d / "schema.toml", d / "policy.toml", d / "ledger.sqlite", None, ",", "false")


@pytest.mark.privacy  # in the gate: mutation review N05, N14, N16, N17 (stop 55)
def test_a_headerless_file_read_with_a_header_logs_the_node_config_key_that_reads_it(files, caplog):
    """The party's log named `--no-header`, a flag of the edprf commands that no party has."""
    d, schema = files
    party = Party(_setup(d, "no-header.data"))
    with caplog.at_level("ERROR", logger="edprf.party"), pytest.raises(Refusal) as exc:
        party.train(_request(schema))
    assert exc.value.reason == "invalid_local_data" and "data-header" not in str(exc.value)  # the reply: constant
    assert "if the file has no header, set data-header=false in the node config" in caplog.text
    assert "--no-header" not in caplog.text
    assert party.ledger.entries() == []


@pytest.mark.privacy  # in the gate: mutation review N05, N14, N16, N17 (stop 55)
def test_the_file_check_before_the_reservation_accepts_what_the_reader_reads(files):
    """A party refuses an unusable data file before it reserves (the reservation now comes before the read), by the
    reader's own file-level checks on the header line alone: a file the reader reads must pass it (a byte-order
    mark, gzip, a headerless file with data-header=false, Parquet), and one it refuses must not."""
    import gzip

    from client._local_data import data_file_problem

    d, schema = files
    text = (d / "with-header.csv").read_bytes()
    (d / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text)
    (d / "rows.csv.gz").write_bytes(gzip.compress(text))
    (d / "blank-first.csv").write_bytes(b"\n\n" + text)
    pd.read_csv(d / "with-header.csv").to_parquet(d / "rows.parquet")
    for name in ("with-header.csv", "bom.csv", "rows.csv.gz", "blank-first.csv", "rows.parquet"):
        assert data_file_problem(d / name, schema) is None, name
        assert len(load_local_data(d / name, schema, 0.2, "0" * 32).y_train) > 0, name
    assert data_file_problem(d / "no-header.data", schema, header=False) is None
    assert "data-header=false" in data_file_problem(d / "no-header.data", schema)
    assert "does not exist" in data_file_problem(d / "absent.csv", schema)
    assert "data-separator" in data_file_problem(d / "with-header.csv", schema, sep=";")
    # a Parquet file without a column: judged from its footer, before any reservation (whole-change review F4)
    pd.read_csv(d / "with-header.csv").drop(columns=[schema.feature_names[0]]).to_parquet(d / "short.parquet")
    assert "missing columns" in data_file_problem(d / "short.parquet", schema)
    # names with surrounding whitespace read as the names (the footer check strips them; so does the reader now)
    spaced = pd.read_csv(d / "with-header.csv").rename(columns=lambda c: f" {c} ")
    spaced.to_parquet(d / "spaced.parquet")
    assert data_file_problem(d / "spaced.parquet", schema) is None
    assert len(load_local_data(d / "spaced.parquet", schema, 0.2, "0" * 32).y_train) > 0
    (d / "broken.parquet").write_bytes(b"PAR1 not a parquet file")
    assert "cannot read Parquet file" in data_file_problem(d / "broken.parquet", schema)
