"""protocol.load_classifier: a global model as a fitted scikit-learn classifier, signatures verified with keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import CalibrationDisplay
from sklearn.compose import ColumnTransformer
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.pipeline import Pipeline

import protocol
from edprf_core import ReleasedForestClassifier, example_schema, load_embedded
from protocol import InvalidRelease, load_classifier, load_global_model, save_public_key


def _test_rows(model: dict) -> tuple[pd.DataFrame, pd.Series]:
    frame = pd.read_csv(model["data"])
    schema = example_schema("bank_marketing")
    return frame[list(schema.feature_names)], frame[schema.label.column]


def test_load_classifier_verifies_with_keys_and_predicts_like_the_global_model(bank_model):
    clf = load_classifier(bank_model["model"], keys_dir=bank_model["keys"])
    assert isinstance(clf, ReleasedForestClassifier)
    assert clf.provenance.verified and clf.provenance.run_id == "test-run"
    assert clf.provenance.parties == ("hospital-a", "hospital-b", "hospital-c")
    X, y = _test_rows(bank_model)
    view = load_global_model(bank_model["model"])
    assert np.array_equal(clf.predict_proba(X), view.forest.predict_proba(X))
    assert list(clf.classes_) == ["no", "yes"]
    assert list(clf.feature_names_in_) == list(view.schema.feature_names)
    assert clf.n_features_in_ == view.schema.n_features
    assert clf.score(X, y) == pytest.approx(accuracy_score(y, clf.predict(X)))
    assert "NOT differentially private" in clf.guarantee_  # the fixture's forests are seeded


def test_without_keys_the_signatures_are_recorded_as_not_verified(bank_model):
    clf = load_classifier(bank_model["model"])
    assert not clf.provenance.verified
    assert set(clf.provenance.signatures) == {"unverified"}
    assert "NOT verified" in clf.provenance.signature_summary()
    assert clf.provenance.signature_summary().endswith("to verify them")  # signed: keys would verify them


def test_an_unsigned_model_is_not_told_to_pass_keys(bank_model):
    """A simulation's model holds unsigned releases: no key can verify them, and the summary no longer says to pass
    --keys (walkthrough of stop 45; docs/using-a-model.md says to leave --keys out for it)."""
    from dataclasses import replace

    clf = load_classifier(bank_model["model"])
    unsigned = replace(clf.provenance, signatures=("unsigned",) * len(clf.provenance.signatures))
    assert unsigned.signature_summary() == f"signatures NOT verified ({len(unsigned.signatures)} unsigned)"


def test_wrong_keys_refuse_the_model(bank_model, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    for party in ("hospital-a", "hospital-b", "hospital-c"):
        save_public_key(protocol.generate_signing_key("ed25519").public_key(), keys / f"{party}.pub.pem")
    with pytest.raises(InvalidRelease) as info:
        load_classifier(bank_model["model"], keys_dir=keys)
    assert info.value.reason is protocol.Reason.BAD_SIGNATURE


def test_usable_in_a_pipeline_with_sklearn_metrics_and_calibration_display(bank_model):
    import matplotlib

    matplotlib.use("Agg")
    clf = load_classifier(bank_model["model"], keys_dir=bank_model["keys"])
    X, y = _test_rows(bank_model)
    X_extra = X.assign(patient_id=np.arange(len(X)))  # a column the model does not use
    select = ColumnTransformer(
        [("features", "passthrough", list(clf.feature_names_in_))], remainder="drop", verbose_feature_names_out=False
    ).set_output(transform="pandas")
    pipe = Pipeline([("select", select), ("model", clf)]).fit(X_extra, y)
    assert np.array_equal(pipe.predict_proba(X_extra), clf.predict_proba(X))
    assert roc_auc_score(y == "yes", pipe.predict_proba(X_extra)[:, 1]) == pytest.approx(
        roc_auc_score(y == "yes", clf.predict_proba(X)[:, 1])
    )
    display = CalibrationDisplay.from_estimator(clf, X, y, pos_label="yes", n_bins=5)
    assert display.prob_true.size >= 1 and np.all((display.prob_pred >= 0) & (display.prob_pred <= 1))


def test_fit_does_not_retrain_and_a_refused_cell_names_its_column(bank_model):
    clf = load_classifier(bank_model["model"])
    X, y = _test_rows(bank_model)
    before = clf.predict_proba(X)
    assert clf.fit(X, y) is clf
    assert np.array_equal(clf.predict_proba(X), before)
    bad = X.head(3).astype(object).copy()
    bad.loc[bad.index[0], "age"] = "abc"
    with pytest.raises(ValueError, match="'age'"):
        clf.predict(bad)


def test_multiclass_model_probabilities_sum_to_one(wall_model):
    clf = load_classifier(wall_model["model"], keys_dir=wall_model["keys"])
    X, _, schema = load_embedded("wall_robot_navigation")
    proba = clf.predict_proba(X.tail(200))
    assert proba.shape == (200, 4) and np.allclose(proba.sum(axis=1), 1)
    assert list(clf.classes_) == list(schema.classes)


def _unseeded_model(tmp_path) -> tuple[object, object]:
    """A global model of one production (unseeded, exact sampler) release, and the estimator that released it."""
    from edprf_core import EDPRFClassifier
    from protocol import ReleasePolicy, build_global_model, decode_release, encode_release

    X, y, schema = load_embedded("bank_marketing")
    estimator = EDPRFClassifier(schema, epsilon=1.0, n_trees=2, max_depth=3, n_bins=10, marginals_share=0)
    estimator.fit(X.iloc[:2000], y.iloc[:2000])
    policy = ReleasePolicy(max_epsilon=2.0, max_depth=8, max_n_trees=50, max_bytes=1 << 22, max_n_bins=32)
    release = decode_release(encode_release(estimator.forest_, "party-a", None, run_id="dp-run"), schema, policy)
    path = tmp_path / "dp-model.edprf"
    path.write_bytes(build_global_model(schema, [release], {"run_id": "dp-run"}))
    return load_classifier(path), estimator


def test_a_loaded_model_has_dp_as_the_estimator_has(bank_model, tmp_path):
    """load_classifier's model had guarantee_ but no dp_, which docs/estimator.md presents (walkthrough)."""
    seeded = load_classifier(bank_model["model"])
    assert seeded.dp_ is False and "NOT differentially private" in seeded.guarantee_
    loaded, estimator = _unseeded_model(tmp_path)
    assert estimator.dp_ is True and loaded.dp_ is True
    assert "NOT differentially private" not in loaded.guarantee_


def test_a_loaded_model_has_a_short_repr(bank_model):
    """Its repr embedded the whole forest (arrays) and the provenance's guarantee: hundreds of lines in a set_params
    error (walkthrough).  Now each parameter prints on one line, the guarantee stays out."""
    clf = load_classifier(bank_model["model"], keys_dir=bank_model["keys"])
    text = repr(clf)
    assert text.count("\n") <= 1 and len(text) < 400
    assert "DPForest(schema='bank-marketing', 12 trees, 3 parts, split_mode='binary', grid_bins=10" in text
    assert "3 parties, signatures verified, NOT DP)" in text
    assert "array(" not in text and "differentially private" not in text
    with pytest.raises(ValueError, match="Invalid parameter 'foo'") as refused:
        clf.set_params(foo=1)
    assert len(str(refused.value)) < 600
