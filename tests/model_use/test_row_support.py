"""row_support: rows in a region with no training rows get low support, typical rows ok; the noise moments used by
the rule are the discrete Laplace ones; edprf predict appends the support column and counts low rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier
from edprf_core._marginals import NoisyMarginals
from edprf_core._support import Z_SCORE, _discrete_laplace_moments, bin_signal_to_noise, bins_within_noise
from edprf_core.prediction import row_support, score_rows
from tests.synthetic import make_schema


def _rows(n: int, seed: int, low: float, high: float) -> pd.DataFrame:
    """Rows with x0 uniform in [low, high] (the schema's bounds are 0..10), the rest anywhere in the domain."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x0": rng.uniform(low, high, n),
            "x1": rng.uniform(0, 10, n),
            "c0": rng.choice(["v0", "v1", "v2"], n),
        }
    )


def _fit_on_low_x0(marginals_share: float):
    """A forest trained on x0 in [0, 4] only: the schema's x0 bins above 4 hold noise and nothing else."""
    schema = make_schema(n_continuous=2, n_categorical=1)
    X = _rows(20_000, 0, 0.0, 4.0)
    y = pd.Series(np.where(X["x1"] > 5, "k1", "k0"), name="label")
    clf = EDPRFClassifier(
        schema, epsilon=1.0, n_trees=3, max_depth=3, n_bins=10, marginals_share=marginals_share, random_state=0
    )
    return clf.fit(X, y).forest_


@pytest.fixture(scope="module")
def fitted():
    """Trained on x0 in [0, 4] only, half the rows on the marginals part."""
    return _fit_on_low_x0(0.5)


def test_rows_beyond_the_training_data_are_low_and_name_the_feature(fitted):
    # Beyond x0 = 4 every x0 marginals bin is empty: its released mass is noise, above Z_SCORE standard deviations
    # with probability about 2.3 % per bin (normal tail at 2), so with 10 bins of width 1 and 6 empty ones the
    # seeded release below flags all rows at x0 >= 5 (x0 bins [5, 10], away from the edge bin [4, 5)).
    beyond = _rows(200, 1, 5.0, 10.0)
    support = row_support(fitted, beyond)
    assert support.low.all()
    assert support.low_features[:, 0].all()  # x0, and only x0, is named
    assert not support.low_features[:, 1:].any()
    # the trees' leaves there are empty too (most of them within noise): named after the feature
    assert all(label.startswith("low: x0") for label in support.labels())


def test_typical_rows_are_ok(fitted):
    # Rows like the training rows (x0 in [0, 4)): every bin they reach holds about 20000 * 0.5 / 10 ... 4 bins, ~2500
    # rows, hundreds of noise standard deviations above the threshold; none may be low.
    typical = _rows(2000, 2, 0.0, 3.99)
    support = row_support(fitted, typical)
    assert not support.low.any()
    assert set(support.labels()) == {"ok"}
    assert np.nanmax(support.low_leaf_share) <= 0.5


@pytest.fixture(scope="module")
def trees_only():
    """The same rows, no marginals part: only the trees' leaves carry evidence."""
    return _fit_on_low_x0(0.0)


def test_tree_leaves_within_noise_make_a_row_low(trees_only):
    """A forest whose leaves released nothing but what an empty leaf releases: every row is low for its trees."""
    fitted = trees_only
    trees = fitted.trees
    counts = trees.leaf_counts.copy()
    leaves = trees.has_counts()
    counts[leaves] = 0  # an empty leaf's clamped noise is often 0: far below mean + Z_SCORE sd of an empty leaf
    empty = dataclasses.replace(fitted, trees=dataclasses.replace(trees, leaf_counts=counts))
    support = row_support(empty, _rows(50, 3, 0.0, 4.0))
    assert support.low.all()
    assert (support.low_leaf_share == 1.0).all()
    assert set(support.labels()) == {"low: tree leaves"}
    # and the same forest with its real counts: trees alone say ok for typical rows
    real = dataclasses.replace(empty, trees=trees)
    assert not row_support(real, _rows(50, 3, 0.0, 3.99)).low.any()


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0, 10.0])
def test_noise_moments_are_the_discrete_laplace_ones(scale):
    """Exact sums over z in [-2000, 2000] (the tail beyond has mass below exp(-2000 / 10) / (1 - a))."""
    z = np.arange(-2000, 2001, dtype=np.float64)
    a = np.exp(-1.0 / scale)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    var, mean_pos, var_pos = _discrete_laplace_moments(np.asarray([scale]))
    pos = np.maximum(z, 0.0)
    assert var[0] == pytest.approx(float(pmf @ z**2), rel=1e-9)
    assert mean_pos[0] == pytest.approx(float(pmf @ pos), rel=1e-9)
    assert var_pos[0] == pytest.approx(float(pmf @ pos**2) - float(pmf @ pos) ** 2, rel=1e-9)
    assert Z_SCORE == 2.0


def test_a_bins_signal_to_noise_is_its_mass_over_an_empty_bins_noise_sd():
    """Two classes, d = 2, ε = 1, add-remove: each cell's scale is 2, an empty bin's mass has sd sqrt(2 Var Z);
    a bin exactly at 2 sd is within noise, one a count above is not."""
    sd = float(np.sqrt(2 * _discrete_laplace_moments(np.asarray([2.0]))[0][0]))
    edge = int(np.floor(Z_SCORE * sd))
    counts = (np.array([[edge, 0], [edge + 1, 0], [-3, 1]]), np.array([[50, 50], [0, 0]]))
    marginals = NoisyMarginals(counts, 1.0, "add-remove", 2)
    snr = bin_signal_to_noise(marginals)
    np.testing.assert_allclose(snr[0], np.array([edge, edge + 1, -2]) / sd)
    assert [list(low) for low in bins_within_noise(marginals)] == [[True, False, True], [False, True]]
    assert [list(low) for low in bins_within_noise(marginals, 0.0)] == [[False, False, True], [False, True]]


def test_the_support_rule_reads_bins_within_noise(fitted):
    """The rows' flagged features are the bins bins_within_noise flags (one test of a thin bin)."""
    grid_codes = fitted.encode(_rows(300, 6, 0.0, 10.0))  # the marginals share the forest's grid here
    assert fitted.marginals_bins == fitted.grid_bins
    flags = bins_within_noise(fitted.marginals)
    support = row_support(fitted, _rows(300, 6, 0.0, 10.0))
    expected = np.column_stack([flags[j][grid_codes[:, j]] for j in range(grid_codes.shape[1])])
    np.testing.assert_array_equal(support.low_features, expected)
    assert expected[:, 0].any() and not expected[:, 0].all()


def test_score_rows_support_labels_only_scored_rows(fitted):
    frame = pd.concat([_rows(3, 4, 0.0, 3.99), _rows(3, 5, 6.0, 10.0)], ignore_index=True).astype(object)
    frame.iat[0, 1] = "abc"  # refused: not scored, no support label
    scores = score_rows(fitted, frame, support=True)
    assert list(scores.support[:3]) == ["", "ok", "ok"]
    assert all(label.startswith("low: x0") for label in scores.support[3:])
    assert score_rows(fitted, frame).support is None


def test_predict_appends_the_support_column_and_counts_low_rows(tmp_path, capsys, bank_model):
    """A balance of 100000 (the schema's upper bound, far above any training row of the seeded bank model) is
    low; a typical row ok; a refused row has no support label; the summary counts the low rows."""
    from edprf_core import example_schema
    from edprf_fl.cli import main

    schema = example_schema("bank_marketing")
    good = "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown"
    rich = good.replace(",no,0,", ",no,100000,", 1)
    lines = [",".join(schema.feature_names), good, good.replace("51,", "abc,", 1), rich]
    data = tmp_path / "in.csv"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["predict", str(bank_model["model"]), str(data), "-o", str(out)]) == 0
    frame = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(frame.columns) == ["line", "status", "detail", "p_no", "p_yes", "predicted", "support"]
    assert list(frame["support"]) == ["ok", "", "low: balance"]
    assert "1 row with low support" in capsys.readouterr().err


def test_explain_says_when_a_rows_support_is_low(tmp_path, capsys, bank_model):
    from edprf_core import example_schema
    from edprf_fl.cli import main

    schema = example_schema("bank_marketing")
    good = "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown"
    rich = good.replace(",no,0,", ",no,100000,", 1)
    data = tmp_path / "in.csv"
    data.write_text("\n".join([",".join(schema.feature_names), good, rich]) + "\n", encoding="utf-8")
    assert main(["explain", str(bank_model["model"]), str(data), "--row", "1"]) == 0
    assert "support: low: balance: the released counts behind this row (balance) are within noise" in (
        capsys.readouterr().out
    )
    assert main(["explain", str(bank_model["model"]), str(data), "--row", "0"]) == 0
    assert "support:" not in capsys.readouterr().out
