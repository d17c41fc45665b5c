"""Bad input gets a clear error; out-of-domain values follow the schema's rules."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from edprf_core import (
    CategoricalFeature,
    ContinuousFeature,
    DataValidationError,
    DPMarginalsClassifier,
    EDPRFClassifier,
    LabelSpec,
    PrivacyLeakWarning,
    Schema,
    SchemaError,
    draft_schema,
    load_schema,
)
from edprf_core.encoding import FeatureGrid, conforming_rows, encode_features
from edprf_core.research import PaperEDPRFClassifier


def _fit(schema, X, y, **kw):
    return EDPRFClassifier(schema, n_trees=2, max_depth=2, random_state=0, **kw).fit(X, y)


def test_unknown_column(schema, data):
    X, y = data
    with pytest.raises(DataValidationError, match=r"unknown columns \['surprise'\]"):
        _fit(schema, X.assign(surprise=1), y)


def test_declared_ignored_column_is_accepted(schema, data):
    X, y = data
    relaxed = Schema(schema.features, schema.label, ignored_columns=("surprise",))
    _fit(relaxed, X.assign(surprise=1), y)


def test_missing_column(schema, data):
    X, y = data
    with pytest.raises(DataValidationError, match=r"missing columns \['x1'\]"):
        _fit(schema, X.drop(columns=["x1"]), y)


def test_nan_without_rule_names_column_value_and_row(schema, data):
    X, y = data
    X = X.copy()
    X.loc[17, "x2"] = np.nan
    with pytest.raises(DataValidationError, match=r"column 'x2': missing value .*row 17"):
        _fit(schema, X, y)


def test_undeclared_category_is_refused_with_row(schema, data):
    X, y = data
    X = X.copy()
    X.loc[5, "c0"] = "zebra"
    with pytest.raises(DataValidationError, match=r"column 'c0': undeclared category .*row 5: 'zebra'"):
        _fit(schema, X, y)


def test_catch_all_category_and_imputation():
    schema = Schema(
        features=(
            ContinuousFeature("x", 0.0, 10.0, missing=5.0),
            CategoricalFeature("c", ("a", "b", "other"), unknown="other", missing="other"),
        ),
        label=LabelSpec("y", (0, 1)),
    )
    grid = FeatureGrid.from_schema(schema, n_bins=2)
    X = pd.DataFrame({"x": [np.nan, -100.0, 100.0, 4.9], "c": ["a", "zebra", None, "b"]})
    codes = encode_features(X, schema, grid)
    # x: NaN -> 5.0 -> bin 1; -100 clipped to 0 -> bin 0; 100 clipped to 10 -> bin 1
    assert codes[:, 0].tolist() == [1, 0, 1, 0]
    assert codes[:, 1].tolist() == [0, 2, 2, 1]


def test_clipping_never_widens_the_domain(schema, data):
    X, y = data
    X = X.copy()
    X.loc[0, "x0"] = 1e9
    clf = _fit(schema, X, y)
    assert clf.forest_.schema.features[0].upper == 10.0


def test_label_outside_declared_classes(schema, data):
    X, y = data
    y = y.copy()
    y.iloc[3] = "k9"
    with pytest.raises(DataValidationError, match=r"label column 'label': undeclared class.*'k9'.*declared classes"):
        _fit(schema, X, y)


def test_missing_label(schema, data):
    X, y = data
    y = y.copy()
    y.iloc[3] = None
    with pytest.raises(DataValidationError, match="missing value"):
        _fit(schema, X, y)


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), None])
def test_bad_epsilon(schema, data, eps):
    with pytest.raises(ValueError, match="'epsilon' parameter of EDPRFClassifier must be a float in the range"):
        _fit(schema, *data, epsilon=eps)


@pytest.mark.parametrize("depth", [0, -3, 1.5, 31])
def test_bad_depth(schema, data, depth):
    with pytest.raises(ValueError, match="'max_depth' parameter of EDPRFClassifier must be"):
        EDPRFClassifier(schema, max_depth=depth).fit(*data)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"n_trees": 0}, "'n_trees' parameter of PaperEDPRFClassifier must be"),
        ({"n_bins": 1}, "'n_bins' parameter of PaperEDPRFClassifier must be"),
        ({"split_mode": "ternary"}, "'split_mode' parameter of PaperEDPRFClassifier must be"),
        ({"schedule": "cosine"}, "'schedule' parameter of PaperEDPRFClassifier must be"),
        ({"relation": "swap"}, "'relation' parameter of PaperEDPRFClassifier must be"),
        ({"variant": "magic"}, "'variant' parameter of PaperEDPRFClassifier must be"),
        ({"relation": "replace-one", "exploit_monotonicity": True}, "monotonicity holds only"),
    ],
)
def test_bad_parameters(schema, data, kw, match):
    with pytest.raises(ValueError, match=match):
        PaperEDPRFClassifier(schema, **kw).fit(*data)


@pytest.mark.parametrize("option", ["schedule", "composition", "variant", "exploit_monotonicity", "stop_when_pure"])
def test_the_production_estimator_has_no_research_options(schema, option):
    """The paper's options live behind edprf_core.research: the production estimator does not take them."""
    assert option not in EDPRFClassifier().get_params()
    assert option in PaperEDPRFClassifier().get_params()
    with pytest.raises(ValueError, match="'sampler' parameter of EDPRFClassifier must be a str among"):
        EDPRFClassifier(schema, sampler="numpy").fit(None, None)


def test_empty_data_still_gives_a_dp_forest_of_the_same_shape(schema, data):
    """No rows is a dataset like any other: refusing it would tell a neighbouring
    one-row dataset apart with certainty.  Every node runs its mechanism on zero counts."""
    X, y = data
    empty = _fit(schema, X.iloc[:0], y.iloc[:0]).forest_.trees
    full = _fit(schema, X, y).forest_.trees
    assert np.array_equal(empty.tree_offsets, full.tree_offsets)
    assert np.array_equal(empty.first_child, full.first_child)
    assert _fit(schema, X.iloc[:0], y.iloc[:0]).predict(X.iloc[:0]).shape == (0,)


def test_row_count_mismatch(schema, data):
    X, y = data
    with pytest.raises(DataValidationError, match="rows but y has"):
        _fit(schema, X, y.iloc[:-1])


def test_schema_is_required(data):
    with pytest.raises(ValueError, match="needs a public schema"):
        EDPRFClassifier().fit(*data)


def test_array_input_is_read_in_schema_order(schema, data):
    X, y = data
    a = _fit(schema, X, y).predict(X)
    b = _fit(schema, X.to_numpy(), y.to_numpy()).predict(X.to_numpy())
    assert np.array_equal(a, b)
    with pytest.raises(DataValidationError, match="expected 5"):
        _fit(schema, X.to_numpy()[:, :3], y)


def test_draft_schema_warns_and_produces_a_usable_schema(data):
    X, y = data
    frame = X.assign(label=y)
    with pytest.warns(PrivacyLeakWarning, match="replace them with public knowledge|Replace them"):
        drafted = draft_schema(frame, "label")
    assert drafted.feature_names == tuple(X.columns)
    assert "DRAFTED" in drafted.features[0].source


@pytest.mark.parametrize(
    "toml,match",
    [
        (
            'format = 2\n[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\nlower=0.0\nupper=1.0',
            "unsupported schema format",
        ),
        (
            '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\nlower=1.0\nupper=0.0',
            "lower must be < upper",
        ),
        (
            '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\nlower=0.0\nupper=1.0\nbins=4',
            r"unknown keys \['bins'\]",
        ),
        (
            '[label]\ncolumn="y"\nclasses=[0]\n[[features]]\nname="c"\nkind="categorical"\ncategories=["a","b"]',
            "at least 2",
        ),
        (
            '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="c"\nkind="categorical"\ncategories=["a","a"]',
            "duplicates",
        ),
        (
            (
                '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="c"\nkind="categorical"\ncategories=["a","b"]\n'
                'unknown="z"'
            ),
            "unknown must be 'refuse' or one of the declared",
        ),
        (
            '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="y"\nkind="categorical"\ncategories=["a","b"]',
            "unique",
        ),
        (
            (
                '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\nlower=0.0\nupper=1.0\n'
                "edges=[0.5, 0.2]"
            ),
            "strictly increasing",
        ),
        ("not = toml = at all", "not valid TOML"),
    ],
)
def test_schema_errors(tmp_path, toml, match):
    path = tmp_path / "s.toml"
    path.write_text(toml)
    with pytest.raises(SchemaError, match=match):
        load_schema(path)


def test_schema_toml_round_trip_and_fingerprint(tmp_path, schema):
    path = tmp_path / "s.toml"
    schema.save(path)
    again = load_schema(path)
    assert again == schema
    assert again.fingerprint == schema.fingerprint
    # free text does not enter the fingerprint; semantics do
    relabelled = Schema(schema.features, schema.label, name="other", description="changed")
    assert relabelled.fingerprint == schema.fingerprint
    narrower = Schema((ContinuousFeature("x0", 0.0, 9.0),) + schema.features[1:], schema.label)
    assert narrower.fingerprint != schema.fingerprint


def test_fingerprint_is_stable_across_processes(schema):
    import subprocess
    import sys

    code = "from tests.synthetic import make_schema; print(make_schema().fingerprint)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": "", "PYTHONPATH": "."},
    )
    assert out.stdout.strip() == schema.fingerprint


@pytest.mark.parametrize(
    "toml",
    [
        'features = 1\n[label]\ncolumn="y"\nclasses=[0,1]',
        'label = "y"\n[[features]]\nname="x"\nkind="continuous"\nlower=0.0\nupper=1.0',
        (
            'ignored_columns = "abc"\n[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\n'
            "lower=0.0\nupper=1.0"
        ),
        '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="continuous"\nlower=0.0\nupper=1.0\nedges="ab"',
        '[label]\ncolumn="y"\nclasses=[0,1]\n[[features]]\nname="x"\nkind="categorical"\ncategories="ab"',
    ],
)
def test_hostile_schema_toml_raises_schema_error(toml):
    from edprf_core import Schema

    with pytest.raises(SchemaError):
        Schema.from_toml(toml)


def test_conforming_rows_is_a_per_record_filter(schema, data):
    from edprf_core.encoding import conforming_rows

    X, y = data
    X, y = X.copy(), y.copy()
    X.loc[3, "c0"] = "zebra"
    X.loc[7, "x1"] = np.nan
    y.iloc[11] = "k9"
    keep, notes = conforming_rows(X, y, schema)
    assert np.flatnonzero(~keep).tolist() == [3, 7, 11]
    assert len(notes) == 3 and any("'zebra'" not in n and "c0" in n for n in notes)
    # a row's fate depends on that row only: removing another row does not change it
    keep2, _ = conforming_rows(X.drop(index=5), y.drop(index=5), schema)
    assert np.array_equal(np.delete(keep, 5), keep2)


@pytest.mark.parametrize("estimator", ["EDPRFClassifier", "PaperEDPRFClassifier"])
def test_every_parameter_is_declared_and_checked_before_fitting(estimator):
    """scikit-learn's own check: each __init__ parameter has a constraint, and fit refuses every invalid value of it."""
    from sklearn.utils.estimator_checks import check_param_validation

    cls = {"EDPRFClassifier": EDPRFClassifier, "PaperEDPRFClassifier": PaperEDPRFClassifier}[estimator]
    schema = Schema(
        features=tuple(ContinuousFeature(str(i), -4.0, 4.0) for i in range(10)),
        label=LabelSpec("y", (0, 1, 2)),
        name="param-checks",
    )
    assert set(cls._parameter_constraints) == set(cls().get_params())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the check's unscaled data lie outside the declared bounds
        check_param_validation(estimator, cls(schema, n_trees=2, max_depth=2, random_state=0))


@pytest.mark.parametrize("name", ["n_trees", "max_depth", "max_depth_cap", "n_rows_public", "n_bins"])
def test_a_bool_is_not_a_count(schema, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter of EDPRFClassifier must be an int"):
        EDPRFClassifier(schema, **{name: True}).fit(None, None)


@pytest.mark.parametrize(("name", "value"), [("epsilon", True), ("marginals_share", False)])
def test_a_bool_is_not_a_number(schema, name, value):
    """epsilon=True was accepted and fitted at epsilon = 1 (scikit-learn's Interval(Real) admits a bool)."""
    with pytest.raises(ValueError, match=f"'{name}' parameter of EDPRFClassifier: expected a number, got bool"):
        EDPRFClassifier(schema, **{name: value}).fit(None, None)


def _grid(schema):
    return FeatureGrid.from_schema(schema, n_bins=2)


def test_undeclared_category_names_the_declared_ones_and_a_near_miss(schema, data):
    """It said only "undeclared category ... at row 5: 'V1'": neither the declared categories nor the case."""
    X = data[0].copy()
    X.loc[5, "c0"] = "V1"
    X.loc[7, "c0"] = "zebra"
    with pytest.raises(DataValidationError) as err:
        _fit(schema, X, data[1])
    text = str(err.value)
    assert "row 5: 'V1', row 7: 'zebra'" in text
    assert "did you mean 'v1' for 'V1'?" in text and "case counts" in text
    assert "declared categories are ['v0', 'v1', 'v2']" in text
    X.loc[7, "c0"] = "v2"
    with pytest.raises(DataValidationError, match=r"row 5: 'V1'; did you mean 'v1'\? "):
        _fit(schema, X, data[1])


def test_undeclared_category_lists_the_first_ten_of_many_and_counts_the_rest():
    many = tuple(f"job{i:02d}" for i in range(25))
    schema = Schema(features=(CategoricalFeature("job", many),), label=LabelSpec("y", ("no", "yes")))
    X = pd.DataFrame({"job": ["job01", "Job 3"]})
    with pytest.raises(DataValidationError) as err:
        encode_features(X, schema, _grid(schema))
    text = str(err.value)
    assert f"declared categories are {list(many[:10])!r} and 15 more" in text
    assert "did you mean" not in text  # 'Job 3' is no declared category whatever the case


def test_a_boolean_column_for_a_yes_no_category_is_shown_the_declared_values():
    schema = Schema(features=(CategoricalFeature("default", ("no", "yes")),), label=LabelSpec("y", (0, 1)))
    X = pd.DataFrame({"default": [True, False]})
    with pytest.raises(
        DataValidationError, match=r"row 0: True, row 1: False; declared categories are \['no', 'yes'\]"
    ):
        encode_features(X, schema, _grid(schema))


def test_surrounding_whitespace_kept_by_the_schema_is_named_as_the_near_miss():
    schema = Schema(
        features=(CategoricalFeature("c", ("a", "b")),), label=LabelSpec("y", (0, 1)), strip_whitespace=False
    )
    with pytest.raises(DataValidationError, match=r"did you mean 'a'\? .*strip_whitespace is false"):
        encode_features(pd.DataFrame({"c": ["a", " a "]}), schema, _grid(schema))


def test_a_refusal_names_index_label_and_position_after_a_split(schema, data):
    """After train_test_split it said "at row 14001" of a shorter frame: the label, read as a position."""
    X, y = data[0].copy(), data[1].copy()
    X.index = y.index = X.index + 14000
    bad = X.copy()
    bad.iloc[1, bad.columns.get_loc("c0")] = "zebra"
    with pytest.raises(
        DataValidationError, match=r"column 'c0': undeclared category .* at index 14001 \(iloc 1\): 'zebra'"
    ):
        _fit(schema, bad, y)
    bad = X.astype({"x1": object})
    bad.iloc[2, bad.columns.get_loc("x1")] = "many"
    with pytest.raises(
        DataValidationError, match=r"column 'x1': not a finite number at index 14002 \(iloc 2\): 'many'"
    ):
        _fit(schema, bad, y)
    bad = y.copy()
    bad.iloc[3] = "k9"
    with pytest.raises(DataValidationError, match=r"undeclared class .* at index 14003 \(iloc 3\): 'k9'"):
        _fit(schema, X, bad)
    bad = X.copy()
    bad.iloc[4, bad.columns.get_loc("x2")] = np.nan
    with pytest.raises(DataValidationError, match=r"column 'x2': missing value .* at index 14004 \(iloc 4\): nan"):
        _fit(schema, bad, y)
    # positions alone where they are the labels: a numpy input, a default index
    with pytest.raises(DataValidationError, match=r"column 'x2': missing value .* at row 4: nan"):
        _fit(schema, bad.to_numpy(), y.to_numpy())
    with pytest.raises(DataValidationError, match=r"column 'x2': missing value .* at row 4: nan"):
        _fit(schema, bad.reset_index(drop=True), y.reset_index(drop=True))


def test_conforming_rows_notes_name_index_label_and_position(schema, data):
    X, y = data[0].copy(), data[1].copy()
    X.index = y.index = X.index + 14000
    X.iloc[[1, 5], X.columns.get_loc("c0")] = "zebra"
    keep, notes = conforming_rows(X, y, schema)
    assert keep.sum() == len(X) - 2
    assert notes == [
        "column 'c0': undeclared category and the schema's rule is unknown='refuse': 2 rows (first at index "
        + "[14001, 14005], iloc [1, 5])"
    ]
    _, notes = conforming_rows(X.reset_index(drop=True), y.reset_index(drop=True), schema)
    assert notes[0].endswith("2 rows (first rows [1, 5])")


@pytest.mark.parametrize("estimator", [EDPRFClassifier, DPMarginalsClassifier])
def test_a_declared_size_equal_to_the_exact_row_count_warns_at_the_callers_fit(schema, data, estimator):
    """``n_rows_public=len(X)`` reads the data: the automatic shape then depends on it (a leak the demo once had).
    The declared figure is taken as given (the fit runs), but the caller is told, at its own line."""
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="exactly the number of training rows") as caught:
        estimator(schema, epsilon=1.0, n_rows_public=len(X), random_state=0).fit(X, y)
    assert {w.filename for w in caught if issubclass(w.category, PrivacyLeakWarning)} == {__file__}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        estimator(schema, epsilon=1.0, n_rows_public=len(X) + 50, random_state=0).fit(X, y)  # a public figure
        estimator(schema, epsilon=1.0, random_state=0).fit(X, y)  # a DP count


def test_a_path_given_to_from_toml_is_told_to_load_schema(tmp_path):
    """`Schema.from_toml(path)` said 'schema is not valid TOML: Invalid statement (at line 1, column 1)'
    (walkthrough): it takes the text; load_schema reads a file."""
    from edprf_core import Schema, example_schema, load_schema

    path = tmp_path / "schema.toml"
    example_schema("bank_marketing").save(path)
    renamed = tmp_path / "schema.txt"
    renamed.write_text(path.read_text())
    for given in (str(path), path, str(renamed), "no-such-dir/Schema.TOML"):
        with pytest.raises(SchemaError, match=r"takes a schema's TOML text, not a path: .* load_schema\(path\)"):
            Schema.from_toml(given)
    assert Schema.from_toml(path.read_text()) == load_schema(path)
    with pytest.raises(SchemaError, match="schema is not valid TOML: "):  # text that is no path: the parser's word
        Schema.from_toml("features = [\n")


def test_from_toml_never_touches_the_file_system(monkeypatch):
    """A party reads the coordinator's model through Schema.from_toml: the text it was sent made it stat any path
    the coordinator named (review), a probe of the party host's file system (an automount could block on it)."""
    import os
    import pathlib

    from edprf_core import Schema

    def no_stat(*args, **kwargs):
        raise AssertionError("from_toml looked at the file system")

    monkeypatch.setattr(os, "stat", no_stat)
    monkeypatch.setattr(pathlib.Path, "stat", no_stat)
    for sent in ("/etc/passwd", "/net/another-host/share", "C:\\schemas\\bank"):
        with pytest.raises(SchemaError, match="not a path"):
            Schema.from_toml(sent)


def test_a_drafted_lab_value_is_continuous_and_codes_are_categories_in_numeric_order():
    """`schema draft` made blood glucose (18 readings from 80 to 300) and HbA1c (fractional) categorical, with
    categories in text order ('100', '126', ..., '80', '85', '90'): researcher walkthrough."""
    glucose = [80, 85, 90, 100, 126, 130, 140, 145, 155, 158, 159, 160, 200, 220, 240, 260, 280, 300]
    frame = pd.DataFrame(
        {
            "glucose": glucose,
            "hba1c": [3.5, 4.0, 4.5, 4.8, 5.0, 5.7, 5.8, 6.0, 6.1, 6.2, 6.5, 6.6, 6.8, 7.0, 7.5, 8.2, 8.8, 9.0],
            "thal": [3, 6, 7] * 6,
            "ca": [0, 1, 2, 3, 10, 2] * 3,
            "label": [0, 1, 10] * 6,
        }
    )
    with pytest.warns(PrivacyLeakWarning):
        drafted = draft_schema(frame, "label")
    kinds = {f.name: type(f).__name__ for f in drafted.features}
    assert kinds == {
        "glucose": "ContinuousFeature",
        "hba1c": "ContinuousFeature",
        "thal": "CategoricalFeature",
        "ca": "CategoricalFeature",
    }
    ca = next(f for f in drafted.features if f.name == "ca")
    assert list(ca.categories) == [0, 1, 2, 3, 10] and list(drafted.classes) == [0, 1, 10]


def test_a_drafted_bool_column_is_the_text_categories_a_party_reads():
    """A frame's bool column (Parquet, or bools held as objects) is drafted as the categories "False", "True": the
    party reads such a cell as its text; an infinite number is left out of a drafted bound (a party drops its row)."""
    frame = pd.DataFrame(
        {
            "flag": [True, False] * 10,
            "held": pd.Series([True, False] * 10, dtype=object),
            "x": [1.5, np.inf, 2.5, 3.5] * 5,
            "y": ["a", "b"] * 10,
        }
    )
    with pytest.warns(PrivacyLeakWarning):
        schema = draft_schema(frame, "y")
    features = {f.name: f for f in schema.features}
    assert features["flag"].categories == features["held"].categories == ("False", "True")
    assert features["x"].kind == "continuous" and features["x"].upper < np.inf
