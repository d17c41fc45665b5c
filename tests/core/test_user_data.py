"""A user's own data: declared missing tokens, whitespace, label aliases, a code for missing values, clipping."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest

from edprf_core import (
    CategoricalFeature,
    ContinuousFeature,
    DomainClippingWarning,
    EDPRFClassifier,
    LabelSpec,
    PrivacyLeakWarning,
    Schema,
    SchemaError,
    check_data,
    load_embedded,
)
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

CENSUS = Schema(
    features=(
        ContinuousFeature("age", 17.0, 90.0, missing="separate"),
        CategoricalFeature("workclass", ("Private", "Self-emp", "Gov"), unknown="refuse", missing="separate"),
    ),
    label=LabelSpec("income", ("<=50K", ">50K"), aliases=(("<=50K.", "<=50K"), (">50K.", ">50K"))),
    missing_values=("", "?", "NA"),
)


def test_label_aliases_read_other_spellings_as_declared_classes():
    y = pd.Series([">50K.", " <=50K.", ">50K", "<=50K"], dtype=object)
    assert encode_labels(y, CENSUS).tolist() == [1, 0, 1, 0]


def test_schema_round_trip_keeps_aliases_tokens_and_separate_missing():
    again = Schema.from_toml(CENSUS.to_toml())
    assert again == CENSUS and again.fingerprint == CENSUS.fingerprint
    plain = Schema(features=CENSUS.features, label=LabelSpec("income", ("<=50K", ">50K")))
    assert plain.fingerprint != CENSUS.fingerprint


def test_missing_values_get_a_code_of_their_own():
    X = pd.DataFrame(
        {"age": ["30", " NA ", "?", "", "95"], "workclass": ["Private", "?", " Gov", "NA", "Gov"]}, dtype=object
    )
    grid = FeatureGrid.from_schema(CENSUS, n_bins=4)
    assert grid.n_codes == (5, 4)  # 4 bins + missing; 3 categories + missing
    codes = encode_features(X, CENSUS, grid)
    assert codes[:, 0].tolist() == [0, 4, 4, 4, 3]  # 95 clipped into the last bin, missing -> code 4
    assert codes[:, 1].tolist() == [0, 3, 2, 3, 2]


def test_a_tree_can_use_the_missing_code():
    rng = np.random.default_rng(0)
    n = 2000
    missing = rng.random(n) < 0.5
    X = pd.DataFrame(
        {
            "age": np.where(missing, "?", rng.uniform(20, 80, n).round().astype(int).astype(str)),
            "workclass": rng.choice(["Private", "Gov"], n),
        },
        dtype=object,
    )
    y = pd.Series(np.where(missing, ">50K", "<=50K"))
    clf = EDPRFClassifier(CENSUS, epsilon=5.0, n_trees=1, max_depth=1, n_bins=4, random_state=1).fit(X, y)
    assert clf.score(X, y) > 0.9


def test_separate_is_refused_when_it_is_also_a_category():
    with pytest.raises(SchemaError, match="ambiguous"):
        CategoricalFeature("c", ("separate", "other"), missing="separate")


def test_whitespace_is_stripped_unless_the_schema_says_otherwise():
    X = pd.DataFrame({"age": [" 30 "], "workclass": ["  Gov"]}, dtype=object)
    assert encode_features(X, CENSUS, FeatureGrid.from_schema(CENSUS, 4))[0].tolist() == [0, 2]
    from dataclasses import replace

    strict = replace(CENSUS, strip_whitespace=False)
    with pytest.raises(Exception, match="undeclared category"):
        encode_features(X, strict, FeatureGrid.from_schema(strict, 4))


def test_fit_warns_when_a_column_is_mostly_clipped():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, schema = load_embedded("wall_robot_navigation")
    scaled = make_pipeline(StandardScaler(), EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0))
    with (
        pytest.warns(DomainClippingWarning, match="other units .*also voids the model's DP guarantee"),
        pytest.warns(PrivacyLeakWarning, match="'standardscaler' \\(StandardScaler"),  # review K1
    ):
        scaled.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainClippingWarning)
        EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0).fit(X, y)


def test_predict_warns_when_a_column_is_mostly_clipped():
    """The same unit mistake made only at predict (the test rows scaled, the training rows not): every prediction
    would come from the bounds alone.  Each estimator's predict, predict_proba, predict_log_proba and score (the
    path of cross_val_score) warn once, pointing at the caller; a few clipped rows do not."""
    from edprf_core import DPMarginalsClassifier, ReleasedForestClassifier

    X, y, schema = load_embedded("wall_robot_navigation")
    scaled = (X - X.mean()) / X.std() * 10  # other units: most values below the declared lower bound 0
    fitted = [
        EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0).fit(X, y),
        DPMarginalsClassifier(schema, epsilon=1.0, random_state=0).fit(X, y),
    ]
    fitted.append(ReleasedForestClassifier(fitted[0].forest_))
    few = X.copy()
    few.iloc[:50, 0] = 1e6  # 50 of 5,456 rows out of bounds: ordinary
    for model in fitted:
        for method in (
            model.predict,
            model.predict_proba,
            model.predict_log_proba,
            functools.partial(model.score, y=y),
        ):
            with pytest.warns(DomainClippingWarning, match="other units") as caught:
                method(scaled)
            assert len(caught) == 1 and caught[0].filename == __file__, (model, method)
            with warnings.catch_warnings():
                warnings.simplefilter("error", DomainClippingWarning)
                method(few)


def test_values_just_past_a_bound_are_clipped_without_a_units_warning():
    """One patient at oldpeak 6.2 against a bound of 6.0 ("'oldpeak' 100% ... other units (a scaler before the
    estimator?)"), and 50 robot rows at 5.02 against 5.0, warned of other units: clipping is the rule for them.
    The warning needs evidence: many rows far past the bound, or a value a large part of the domain away."""
    X, y, schema = load_embedded("wall_robot_navigation")
    clf = EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=0).fit(X, y)
    first = schema.features[0]
    near = X.iloc[:50].copy()
    near[first.name] = first.upper + 0.004 * (first.upper - first.lower)  # just past the bound, all 50 rows
    one = X.iloc[:1].copy()
    one[first.name] = first.upper + 0.04 * (first.upper - first.lower)  # one row, a little further
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainClippingWarning)
        for rows in (near, one):
            clipped = clf.predict_proba(rows)
            at_bound = rows.copy()
            at_bound[first.name] = first.upper
            assert np.array_equal(clipped, clf.predict_proba(at_bound))  # clipped as before
    far = X.iloc[:1].copy()
    far[first.name] = first.upper + 0.6 * (first.upper - first.lower)  # one value far away: other units
    with pytest.warns(DomainClippingWarning, match="other units"):
        clf.predict_proba(far)
    many = X.iloc[:10].copy()
    many[first.name] = first.upper + 0.1 * (first.upper - first.lower)  # ten rows well past the bound
    with pytest.warns(DomainClippingWarning, match="other units"):
        clf.predict_proba(many)


def test_check_data_reports_what_each_rule_does(tmp_path):
    path = tmp_path / "census.csv"
    path.write_text('age,workclass,income\n30,Private,>50K.\n200,Gov,<=50K\n?,Self-emp,>50K\n40,Navy,<=50K\n41,"Gov\n')
    report = check_data(path, CENSUS)
    assert report.lines_read == 4 and report.rows_kept == 3
    assert report.lines_dropped == {"unbalanced quotes": 1}
    assert report.rows_dropped == [("workclass", "undeclared category and the schema's rule is unknown='refuse'", 1)]
    assert report.clipped == {"age": (1, 1 / 3)} and report.missing["age"] == (1, "a code of their own")
