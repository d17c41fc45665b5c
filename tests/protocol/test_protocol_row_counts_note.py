"""A global model's manifest records where its row-count figures came from; a simulation's says so in every guarantee."""

from __future__ import annotations

import json

import pytest

from protocol import (
    ROW_COUNTS_KEY,
    SIMULATION_ROW_COUNTS_NOTE,
    InvalidRelease,
    Reason,
    build_global_model,
    decode_release,
    encode_release,
    load_classifier,
    load_global_model,
    save_atomic,
)
from protocol import release_pb2 as pb

WALL = "wall_robot_navigation"


@pytest.fixture
def accepted(forests, policy, wall_schema):
    return [decode_release(encode_release(forests[WALL, "binary"], p), wall_schema, policy) for p in ("a", "b")]


def test_a_model_from_a_simulation_carries_the_note_into_every_guarantee(accepted, wall_schema, tmp_path):
    path = save_atomic(tmp_path / "m.edprf", build_global_model(wall_schema, accepted, {ROW_COUNTS_KEY: "simulation"}))
    view = load_global_model(path)
    assert view.forest.notes == (SIMULATION_ROW_COUNTS_NOTE,)
    headline = view.forest.guarantee().splitlines()[0]
    assert headline.endswith(SIMULATION_ROW_COUNTS_NOTE)  # on the headline, before the parts' lines
    clf = load_classifier(path)
    assert SIMULATION_ROW_COUNTS_NOTE in clf.guarantee_ and SIMULATION_ROW_COUNTS_NOTE in clf.provenance.guarantee
    plain = load_global_model(build_global_model(wall_schema, accepted, {})).forest
    assert clf.provenance.dp == view.forest.dp == plain.dp  # a note adds a condition; it does not decide DP


@pytest.mark.parametrize("manifest", [{}, {ROW_COUNTS_KEY: "declared"}, {"run_id": "old"}])
def test_a_model_without_the_entry_or_with_declared_figures_has_no_note(accepted, wall_schema, manifest):
    view = load_global_model(build_global_model(wall_schema, accepted, manifest))  # older models have no entry
    assert view.forest.notes == () and "Simulation:" not in view.forest.guarantee()


def test_load_without_the_manifest_reads_no_note(accepted, wall_schema):
    data = build_global_model(wall_schema, accepted, {ROW_COUNTS_KEY: "simulation"})
    assert load_global_model(data, manifest=False).forest.notes == ()


@pytest.mark.parametrize(
    ("value", "shown"), [("maybe", "got 'maybe'"), (3, "got int"), (None, "got NoneType"), ("x" * 100, "...")]
)
def test_an_unknown_entry_is_refused_on_build_and_on_load(accepted, wall_schema, value, shown):
    expected = "row_counts expected 'declared' or 'simulation', "
    with pytest.raises(ValueError, match=f"manifest: {expected}") as built:
        build_global_model(wall_schema, accepted, {ROW_COUNTS_KEY: value})
    assert shown in str(built.value)
    model = pb.GlobalModel.FromString(build_global_model(wall_schema, accepted, {}))
    model.manifest_json = json.dumps({ROW_COUNTS_KEY: value})
    with pytest.raises(InvalidRelease) as loaded:
        load_global_model(model.SerializeToString(deterministic=True))
    assert loaded.value.reason is Reason.MALFORMED
    assert f"global model: manifest {expected}" in loaded.value.message and shown in loaded.value.message
    assert len(loaded.value.message) < 200  # a hostile value is not echoed whole


@pytest.mark.parametrize(
    ("parameters", "noted"),
    [
        ({"sim_dir": "/w/workspace", "consortium_rows": 3534, "max_party_rows": 187}, True),
        ({"sim_dir": "/w/workspace", "consortium_rows": 0, "max_party_rows": 187}, True),
        ({"sim_dir": "/w/workspace", "consortium_rows": 0, "max_party_rows": 0}, False),
        ({"sim_dir": "", "consortium_rows": 3534, "max_party_rows": 187}, False),
        ({"consortium_rows": True, "sim_dir": "/w"}, False),
        ({"consortium_rows": "3534", "sim_dir": "/w"}, False),
    ],
)
def test_a_model_written_before_the_entry_reads_its_source_from_its_parameters(
    accepted, wall_schema, parameters, noted
):
    """Models written before ``row_counts`` existed: a simulation's (a sim_dir and a row-count figure, the rule the
    coordinator applies) carries the note, as the same run's model does today; a deployment's does not."""
    view = load_global_model(build_global_model(wall_schema, accepted, {"run_id": "old", "parameters": parameters}))
    assert view.forest.notes == ((SIMULATION_ROW_COUNTS_NOTE,) if noted else ())
    # an explicit entry wins over the parameters
    stated = {"parameters": parameters, ROW_COUNTS_KEY: "declared"}
    assert load_global_model(build_global_model(wall_schema, accepted, stated)).forest.notes == ()
