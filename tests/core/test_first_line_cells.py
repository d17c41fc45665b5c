"""A first line that names none of the schema's columns is described by its count of fields, never its cells.

Security review finding 5: a file without a header whose first row is text (names, free-text codes) is read as
"another table's header", and up to 4 of its cells were quoted in the refusal, which lands in a deployed party's
own log (``local data cannot be used: ...``) and in ``edprf party check``: patient data in a log IT may forward.
"""

from __future__ import annotations

import pytest

from client._local_data import load_local_data
from edprf_core import DataValidationError, example_schema, load_embedded
from edprf_core.tables import read_table, stream_rows

MARKERS = [f"MRK_NAME_{i}" for i in range(25)]
"""A first row of text cells, as many as the schema's features and label: a file without a header."""


@pytest.fixture
def text_first_row(tmp_path):
    X, y, schema = load_embedded("wall_robot_navigation")
    path = tmp_path / "data.csv"
    rows = X.iloc[:20].assign(Class=y.iloc[:20].to_numpy())
    path.write_text(",".join(MARKERS) + "\n" + rows.to_csv(index=False, header=False))
    return path, schema


def _refusal(call) -> str:
    with pytest.raises(DataValidationError) as refused:
        call()
    return str(refused.value)


def test_a_party_s_refusal_names_no_cell_of_the_first_line_and_says_which_node_config_key_helps(text_first_row):
    path, schema = text_first_row
    said = _refusal(lambda: load_local_data(path, schema, 0.1, "salt"))
    assert not [m for m in MARKERS if m in said]
    assert "its first line names none of them (25 fields, none a number or a declared category or class" in said
    assert (
        "If it has no header line (its first line a row of data in the schema's columns), set data-header=false" in said
    )
    assert "'US1', 'US2', 'US3', 'US4', ... (24 features and the label 'Class')" in said  # the schema's: public


def test_the_commands_readers_name_no_cell_either(text_first_row):
    path, schema = text_first_row
    for call in (lambda: read_table(path, schema), lambda: list(stream_rows(path, schema))):
        said = _refusal(call)
        assert not [m for m in MARKERS if m in said] and "(25 fields, " in said
        assert said.endswith("pass --no-header")


def test_another_table_s_header_gets_no_header_hint(tmp_path):
    """Its count of fields is not the schema's: reading it without a header would not help."""
    path = tmp_path / "other.csv"
    path.write_text("visit,site,ward\n" + "a,b,c\n")
    said = _refusal(lambda: read_table(path, example_schema("wall_robot_navigation")))
    assert "(3 fields, " in said and "no header line" not in said and "'visit'" not in said
