"""ε by instrumentation: what one record faces equals what the ledger charges and the guarantee prints.

Every DP mechanism call of a real fit and of a real party's train and evaluate requests is
recorded at our mechanism API and at OpenDP's constructors (:mod:`._instrumentation`),
with production settings: no seed, the exact samplers, the automatic depth with and
without a declared row count, leaf counts and leaf labels, binary and multiway splits.
The ε a record can face is rebuilt from the noise OpenDP really drew and the TRUE
sensitivities of the math (never from what the code declared): the DP row count + the
costliest root-to-leaf path (+ the noised evaluation, which the ledger adds).  It must
equal what the accountant or the party's SQLite ledger charged and what the release's
and the coordinator's guarantee texts print.

Each fit is also checked for what its mechanisms saw and released: the inputs at the
data's true size (and the root's split utilities recomputed from the rows in Python
integers), and every released split, label and leaf count post-processing of the
recorded outputs.

Regression of issue 19, finding 1 (the trees spent the full ε on top of the DP row
count: 1.05 faced, 1 charged) and finding 4 (no test looked at what the mechanisms
really spend): the last tests run weakened copies of the code (less noise behind an
honest-looking privacy map, noise removed from or drawn and dropped by one output,
counts or utilities scaled before the noise, released values changed after it, ε spent
and not charged, the research sampler in production) and check that the checker
refuses each.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import client._party as party_module
import edprf_core._builder as builder
import edprf_core._classifier as classifier
from edprf_core import BudgetAccountant, DPForest, EDPRFClassifier
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip
from edprf_core._opendp_constructors import opendp_constructors
from edprf_core._opendp_entry import IndexDraw, index_draw
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from server._guarantee import PartySpend, federation_guarantee

from ..federation._neighbours import file_bytes, make_party
from ..synthetic import make_data, make_schema
from ._instrumentation import (
    ADD_REMOVE,
    AccountingError,
    Recorder,
    TrueSensitivity,
    account_fit,
    charged_epsilon_of_evaluation,
    charged_epsilon_of_fit,
)
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    global_model,
    ledger,
    metrics_of,
    release_of,
    result_of,
    send_evaluate,
    send_train,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

EXACT = 1e-9
"""Relative agreement of the rebuilt ε with the charged one (the samplers inflate scales by 1e-12)."""


def _printed(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in the guarantee: {text}"
    return float(match.group(1))


def check_fit(calls, forest: DPForest, charged: float, n_rows: int, truth: TrueSensitivity = ADD_REMOVE) -> float:
    """The fit's rebuilt ε; raises AccountingError unless it equals ``charged`` and the printed figures.

    Also: the mechanisms saw the ``n_rows`` training rows, and every released value is
    post-processing of their outputs.
    """
    count_eps, total = account_fit(calls, forest, n_rows, truth)
    if not total <= charged * (1 + 1e-12) or abs(total - charged) > EXACT * charged:
        raise AccountingError(
            f"a record faces epsilon {total!r} (row count {count_eps!r} + costliest path) but {charged!r} was charged"
        )
    text = forest.guarantee()
    printed = _printed(r"epsilon = (\S+) differential privacy per record", text)
    if abs(printed - total) > 1e-5 * total:
        raise AccountingError(f"the guarantee prints epsilon = {printed} but a record faces {total!r}")
    params = forest.parts[0][1]
    if params.depth_rule == "dp-count":
        printed_count = _printed(r"DP count of the rows that spent epsilon = (\S+) of the total", text)
        if abs(printed_count - count_eps) > 1e-5 * count_eps:
            raise AccountingError(f"the guarantee prints a row count at {printed_count}, its noise cost {count_eps!r}")
    elif count_eps != 0:
        raise AccountingError("a row count was drawn but the release says its depth came from elsewhere")
    return total


N_ROWS = 1500


def _fit(monkeypatch, *, n_rows_public=None, relation="add-remove", **options):
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=3)
    X, y = make_data(schema, N_ROWS, seed=0)
    accountant = BudgetAccountant()
    recorder = Recorder().install(monkeypatch)
    clf = EDPRFClassifier(
        schema, sampler="exact", n_rows_public=n_rows_public, relation=relation, accountant=accountant, **options
    ).fit(X, y)
    return recorder.take(), clf, accountant.total


# ------------------------------------------------------------------ the estimator
@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
@pytest.mark.parametrize("leaf", ["counts", "label"])
@pytest.mark.parametrize("declared", [False, True], ids=["dp-count", "declared-rows"])
def test_a_fit_charges_exactly_what_its_noise_costs(monkeypatch, split_mode, leaf, declared):
    calls, clf, charged = _fit(monkeypatch, leaf=leaf, split_mode=split_mode, n_rows_public=1600 if declared else None)
    assert clf.privacy_.depth_rule == ("declared-size" if declared else "dp-count")
    assert clf.privacy_.sampler == "exact" and not clf.privacy_.seeded
    assert charged == 1.0
    assert check_fit(calls, clf.forest_, charged, N_ROWS) == pytest.approx(1.0, rel=EXACT)


@pytest.mark.parametrize(("epsilon", "share"), [(0.7, 0.5), (2.0, 0.05)])
def test_the_row_count_share_comes_out_of_epsilon(monkeypatch, epsilon, share):
    """At share 0.5 the old trees faced 1.5 ε for 1 charged."""
    calls, clf, charged = _fit(monkeypatch, epsilon=epsilon, count_epsilon_share=share, n_trees=3)
    count_eps, _ = charged_epsilon_of_fit(calls, clf.forest_)
    assert count_eps == pytest.approx(share * epsilon, rel=EXACT)
    assert check_fit(calls, clf.forest_, charged, N_ROWS) == pytest.approx(epsilon, rel=EXACT)


def test_replace_one_is_charged_at_its_doubled_sensitivities(monkeypatch):
    calls, clf, charged = _fit(monkeypatch, relation="replace-one", leaf="label", max_depth=3, n_trees=2)
    assert check_fit(calls, clf.forest_, charged, N_ROWS, TrueSensitivity("replace-one")) == pytest.approx(
        1.0, rel=EXACT
    )


def _integer_gini(counts) -> int:
    """``floor(K (N^2 - S) / N)`` in Python integers (0 for an empty child)."""
    n = sum(counts)
    return 0 if n == 0 else (UTILITY_SCALE * (n * n - sum(c * c for c in counts))) // n


def root_utilities_from_the_data(X, y, forest: DPForest) -> list[int]:
    """Every root candidate's utility, recomputed from the rows in Python integers (not the builder's code)."""
    schema = forest.schema
    grid = FeatureGrid.from_schema(schema, forest.grid_bins)
    codes, labels = encode_features(X, schema, grid), encode_labels(y, schema)
    k = schema.n_classes

    def util(groups) -> int:
        return -sum(_integer_gini(np.bincount(labels[g], minlength=k).tolist()) for g in groups)

    if forest.split_mode == "multiway":
        return [util([codes[:, f] == v for v in range(n)]) for f, n in enumerate(grid.n_codes)]
    out = []
    for f, (n, categorical) in enumerate(zip(grid.n_codes, grid.is_categorical)):
        if n < 2:
            continue
        thresholds = ([0] if n == 2 else range(n)) if categorical else range(1, n)
        for c in thresholds:
            left = codes[:, f] == c if categorical else codes[:, f] < c
            out.append(util([left, ~left]))
    return out


def check_root_utilities(calls, X, y, forest: DPForest) -> None:
    """The root's split utilities handed to the mechanism are the data's, exactly (one tree: all rows)."""
    if forest.trees.n_trees != 1:
        raise ValueError("the root holds every row only with one tree")
    root = next(c for c in calls if c.api == "select")
    want = root_utilities_from_the_data(X, y, forest)
    if root.values[0].astype(np.int64).tolist() != want:
        raise AccountingError("the root's split utilities are not the integer weighted Gini of the data")


@pytest.mark.parametrize("split_mode", ["binary", "multiway"])
def test_the_root_split_sees_the_integer_gini_of_the_data(monkeypatch, split_mode):
    calls, clf, charged = _fit(monkeypatch, split_mode=split_mode, n_trees=1)
    schema = clf.forest_.schema
    X, y = make_data(schema, N_ROWS, seed=0)
    check_root_utilities(calls, X, y, clf.forest_)
    check_fit(calls, clf.forest_, charged, N_ROWS)


def test_the_root_check_sees_scaled_utilities(monkeypatch):
    """Power check: utilities doubled before the sampler (half the noise relative to them) are caught."""
    real = builder.integer_weighted_gini
    monkeypatch.setattr(builder, "integer_weighted_gini", lambda v: 2 * real(v))
    calls, clf, _ = _fit(monkeypatch, n_trees=1)
    X, y = make_data(clf.forest_.schema, N_ROWS, seed=0)
    with pytest.raises(AccountingError, match="integer weighted Gini"):
        check_root_utilities(calls, X, y, clf.forest_)


# ------------------------------------------------------------------ the party, through Flower
def _capture_sizes(monkeypatch) -> dict[str, int]:
    """The numbers of training and held-out rows the party really used."""
    sizes: dict[str, int] = {}
    real_fit, real_counts = party_module.EDPRFClassifier.fit, party_module.evaluation_counts

    def fit(self, X, y):
        sizes["train"] = len(y)
        return real_fit(self, X, y)

    def evaluation_counts(forest, X, y):
        sizes["holdout"] = len(y)
        return real_counts(forest, X, y)

    monkeypatch.setattr(party_module.EDPRFClassifier, "fit", fit)
    monkeypatch.setattr(party_module, "evaluation_counts", evaluation_counts)
    return sizes


SETTINGS = [
    (TrainSettings(leaf="counts", split_mode="binary"), 0),
    (TrainSettings(leaf="label", split_mode="multiway", n_bins=4), 0),
    (TrainSettings(leaf="counts", split_mode="multiway", n_bins=4), 1400),
    (TrainSettings(leaf="label", split_mode="binary", n_trees=3), 1400),
]


@pytest.mark.parametrize(
    ("settings", "declared_rows"),
    SETTINGS,
    ids=[f"{s.leaf}-{s.split_mode}-{'declared' if d else 'dp-count'}" for s, d in SETTINGS],
)
def test_a_party_charges_what_a_record_faces_and_prints_it(tmp_path: Path, monkeypatch, settings, declared_rows):
    setup = make_party(tmp_path, file_bytes(n_rows=2000), allow_seeded_randomness=False, declared_rows=declared_rows)
    sizes = _capture_sizes(monkeypatch)
    recorder = Recorder().install(monkeypatch)
    release = release_of(setup, send_train(setup, settings))
    train_calls = recorder.take()
    params = release.forest.parts[0][1]
    assert params.depth_rule == ("declared-size" if declared_rows else "dp-count")
    assert params.sampler == "exact" and not params.seeded and params.dp

    reply = send_evaluate(setup, global_model(release), epsilon=0.25)
    assert result_of(reply) == {"status": "evaluated", "sampler": "exact"}
    eval_calls = recorder.take()
    eval_eps = charged_epsilon_of_evaluation(eval_calls)
    assert eval_calls[0].values[1] == sizes["holdout"] and sizes["train"] + sizes["holdout"] == 2000

    entries = {e.kind: float(e.epsilon_exact) for e in ledger(setup).entries()}
    assert set(entries) == {"release", "evaluation"}
    train_eps = check_fit(train_calls, release.forest, entries["release"], sizes["train"])
    assert train_eps == pytest.approx(settings.epsilon, rel=EXACT)
    assert eval_eps <= entries["evaluation"] and eval_eps == pytest.approx(entries["evaluation"], rel=EXACT)
    assert float(ledger(setup).spent()) == pytest.approx(train_eps + eval_eps, rel=EXACT)

    # what the coordinator prints for this run, from the release's and the reply's public figures
    text = federation_guarantee(release.forest, [PartySpend("harness", params.epsilon, metrics_of(reply)["epsilon"])])
    assert "NOT differentially private" not in text
    printed = _printed(r"Spent for this run: epsilon = (\S+) per record at most", text)
    assert printed == pytest.approx(train_eps + eval_eps, rel=1e-5)


# ------------------------------------------------------------------ the checker catches weakened copies
# Each weakening is applied BEFORE the recorder is installed, as a change to the source would be.
def _identity_counts(counts, epsilon, sensitivity=1, rng=None):
    return np.asarray(counts, dtype=np.int64)


def _weaken_split_noise(monkeypatch):
    """Half the split noise behind an honest-looking map: the code declares half the sensitivity."""
    monkeypatch.setattr(classifier, "UTILITY_SCALE", classifier.UTILITY_SCALE // 2)


def _argmax_splits(monkeypatch):
    """No noise at all in the selections (the best split and label every time)."""
    monkeypatch.setattr(
        ExactPermuteAndFlip,
        "select",
        lambda mech, u, eps, rng=None, valid=None: np.argmax(
            np.where(np.ones_like(u, dtype=bool) if valid is None else valid, u, -np.inf), axis=1
        ),
    )


def _remove_leaf_noise(monkeypatch):
    monkeypatch.setattr(builder, "discrete_laplace_counts", _identity_counts)


def _remove_row_count_noise(monkeypatch):
    monkeypatch.setattr(classifier, "discrete_laplace_counts", _identity_counts)


def _leaf_noise_drawn_then_dropped(monkeypatch):
    """The leaves' noise is drawn (and its ε looks spent) but the exact counts are released."""
    real = builder.discrete_laplace_counts

    def dropped(counts, epsilon, sensitivity=1, rng=None):
        real(counts, epsilon, sensitivity, rng)
        return np.asarray(counts, dtype=np.int64)

    monkeypatch.setattr(builder, "discrete_laplace_counts", dropped)


def _split_utilities_doubled_inside_the_sampler(monkeypatch):
    """The sampler hands OpenDP twice the utilities: half the noise relative to them, same scale."""
    real = ExactPermuteAndFlip.select
    monkeypatch.setattr(
        ExactPermuteAndFlip,
        "select",
        lambda mech, u, eps, rng=None, valid=None: real(
            mech, np.asarray(u) * (2 if mech.sensitivity > 1 else 1), eps, rng, valid
        ),
    )


def _released_leaf_counts_shifted(monkeypatch):
    """Every released leaf count is the noisy count plus one (a reply that is not the mechanism's output)."""
    real = builder.build_forest

    def build(*args, **kwargs):
        trees = real(*args, **kwargs)
        counts = trees.leaf_counts.copy()
        counts[trees.feature < 0] += 1
        return dataclasses.replace(trees, leaf_counts=counts)

    monkeypatch.setattr(classifier, "build_forest", build)


def _leaf_counts_doubled(monkeypatch):
    """The leaves' counts doubled before the noise: half the noise relative to them."""
    real = builder.discrete_laplace_counts
    monkeypatch.setattr(
        builder,
        "discrete_laplace_counts",
        lambda counts, epsilon, sensitivity=1, rng=None: real(2 * np.asarray(counts), epsilon, sensitivity, rng),
    )


def _uncharged_extra_count(monkeypatch):
    """The row count drawn twice (say, a second try), the second one uncharged."""
    real = classifier.discrete_laplace_counts

    def twice(counts, epsilon, sensitivity=1, rng=None):
        real(counts, epsilon, sensitivity, rng)
        return real(counts, epsilon, sensitivity, rng)

    monkeypatch.setattr(classifier, "discrete_laplace_counts", twice)


def _double_epsilon_count(monkeypatch):
    """The row count's noise drawn at twice the ε the caller passed (and the ledger charged)."""
    real = classifier.discrete_laplace_counts
    monkeypatch.setattr(
        classifier,
        "discrete_laplace_counts",
        lambda counts, epsilon, sensitivity=1, rng=None: real(counts, 2 * epsilon, sensitivity, rng),
    )


def _trees_spend_the_full_epsilon(monkeypatch):
    """Finding 1 as it was: the plan's trees got ε, not ε minus the row count's share."""
    real = classifier.EDPRFClassifier._plan
    monkeypatch.setattr(
        classifier.EDPRFClassifier,
        "_plan",
        lambda self, params: real(self, dataclasses.replace(params, count_epsilon=0.0, depth_rule="fixed")),
    )


def _research_sampler_in_production(monkeypatch):
    real = classifier.EDPRFClassifier._plan
    monkeypatch.setattr(
        classifier.EDPRFClassifier,
        "_plan",
        lambda self, params: real(self, dataclasses.replace(params, sampler="numpy")),
    )


def _direct_draws_at_half_scale(monkeypatch):
    """The selections' noisy max built at half the scale, then drawn through the direct C-entry call."""

    def measurement(self, epsilon):
        dp = opendp_constructors()
        scale = (1 if self.monotone else 2) * int(self.sensitivity) / epsilon / 2
        space = dp.vector_domain(dp.atom_domain(T="i64")), dp.linf_distance(T="i64", monotonic=self.monotone)
        draw = index_draw(dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale))
        assert isinstance(draw, IndexDraw)  # the weakening goes through the direct call
        return draw

    monkeypatch.setattr(ExactPermuteAndFlip, "_measurement", measurement)


def _direct_draw_of_doubled_utilities(monkeypatch):
    """The direct call hands OpenDP twice the utilities it was given: half the noise relative to them."""
    real = IndexDraw.__call__
    monkeypatch.setattr(IndexDraw, "__call__", lambda draw, values: real(draw, 2 * np.asarray(values)))


def _direct_draw_without_opendp(monkeypatch):
    """The direct call answers the best candidate itself and never reaches OpenDP."""
    monkeypatch.setattr(IndexDraw, "__call__", lambda draw, values: int(np.argmax(values)))


WEAKENED = [
    _direct_draws_at_half_scale,
    _direct_draw_of_doubled_utilities,
    _direct_draw_without_opendp,
    _weaken_split_noise,
    _argmax_splits,
    _remove_leaf_noise,
    _remove_row_count_noise,
    _leaf_noise_drawn_then_dropped,
    _leaf_counts_doubled,
    _split_utilities_doubled_inside_the_sampler,
    _released_leaf_counts_shifted,
    _uncharged_extra_count,
    _double_epsilon_count,
    _trees_spend_the_full_epsilon,
    _research_sampler_in_production,
]


@pytest.mark.parametrize("weaken", WEAKENED, ids=[w.__name__.strip("_") for w in WEAKENED])
def test_the_checker_refuses_a_weakened_fit(monkeypatch, weaken):
    schema = make_schema(n_continuous=2, n_categorical=1)
    X, y = make_data(schema, 600, seed=0)
    weaken(monkeypatch)
    recorder = Recorder().install(monkeypatch)
    accountant = BudgetAccountant()
    clf = EDPRFClassifier(schema, sampler="exact", n_trees=2, accountant=accountant).fit(X, y)
    with pytest.raises(AccountingError):
        check_fit(recorder.take(), clf.forest_, accountant.total, 600)


def test_the_checker_refuses_a_doctored_record(monkeypatch):
    """The same real record passes, and fails once one OpenDP draw's scale is halved."""
    calls, clf, charged = _fit(monkeypatch, n_trees=2)
    check_fit(calls, clf.forest_, charged, N_ROWS)
    split = next(c for c in calls if c.api == "select" and c.declared_sensitivity > 1)
    split.draws[-1].scale /= 2
    with pytest.raises(AccountingError, match="more than the"):
        check_fit(calls, clf.forest_, charged, N_ROWS)


def test_the_checker_refuses_an_evaluation_released_without_noise(tmp_path: Path, monkeypatch):
    setup = make_party(tmp_path, file_bytes(), allow_seeded_randomness=False)
    release = release_of(setup, send_train(setup, TrainSettings(max_depth=2)))
    monkeypatch.setattr(party_module, "discrete_laplace_counts", _identity_counts)
    recorder = Recorder().install(monkeypatch)
    reply = send_evaluate(setup, global_model(release), epsilon=0.25)
    assert result_of(reply)["status"] == "evaluated"
    with pytest.raises(AccountingError, match="drew exact noise on 0"):
        charged_epsilon_of_evaluation(recorder.take())
