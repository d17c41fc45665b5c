"""ε by instrumentation for a party's production release WITH a marginals part (format 2), through Flower.

A two-class party serves a train request that asks for a marginals part (the consortium's share and
grid) through its real Flower handler, with production settings: no seed, the exact samplers, the
automatic depth from a DP row count or a declared size.  Every mechanism call is recorded
(:mod:`._instrumentation`); the rows the fit assigned to the marginals are recorded where it drew
them, and the fit's inputs where the party hands them over.  :func:`._instrumentation.account_mixed_fit`
then requires, from the noise OpenDP really drew and the TRUE sensitivities: exactly one measured exact
release per histogram on the TRUE histograms of the rows assigned to the marginals (recounted in
Python), each at ``(epsilon - count_epsilon) / d``; the trees' leaves fed by exactly the other rows
(disjoint parts); and a per-record total (row count + the larger of the two parts) equal to what the
party's ledger charged and what the coordinator's guarantee prints.

Weakened copies of the fit (applied before the recorder, as a change to the source would be) must each be
refused: the marginals drawn at the full ε (not ε minus the row count's share) behind the release's
claimed budget, the histograms drawn at half their noise scale, the marginals on ALL the rows (on top of
the trees), the trees on all the rows (on top of the marginals), and the histograms released without noise.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import client._party as party_module
import edprf_core._classifier as classifier
import edprf_core._marginals as marginals_module
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from server._guarantee import PartySpend, federation_guarantee

from ..federation._neighbours import file_bytes, make_party
from ._instrumentation import AccountingError, MixedAccount, Recorder, account_mixed_fit
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    ledger,
    release_of,
    send_train,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

EXACT = 1e-9
"""Relative agreement of the rebuilt ε with the charged one (the samplers inflate scales by 1e-12)."""

MIXED = TrainSettings(max_depth=4, n_bins=8, marginals_share=0.5, marginals_bins=4)
"""A production request with a marginals part: half the rows (in expectation) on a 4-bin grid."""


def _capture_inputs(monkeypatch) -> dict:
    """The rows the party fits on and the rows its fit assigns to the marginals (the TRUE inputs)."""
    seen: dict = {"masks": []}
    real_fit, real_rows = party_module.EDPRFClassifier.fit, classifier.marginals_rows

    def fit(self, X, y):
        seen["X"], seen["y"] = X.copy(), y.copy()
        return real_fit(self, X, y)

    def marginals_rows(n_rows, share, rng):
        mask = real_rows(n_rows, share, rng)
        seen["masks"].append(mask.copy())
        return mask

    monkeypatch.setattr(party_module.EDPRFClassifier, "fit", fit)
    monkeypatch.setattr(classifier, "marginals_rows", marginals_rows)
    return seen


def _account(calls, release, seen) -> MixedAccount:
    schema, params = release.forest.schema, release.params
    grid = FeatureGrid.from_schema(schema, params.marginals_bins)
    (mask,) = seen["masks"]
    codes = encode_features(seen["X"], schema, grid)
    return account_mixed_fit(calls, release.forest, codes, encode_labels(seen["y"], schema), mask)


def _serve(tmp_path: Path, monkeypatch, declared_rows: int, weaken=None):
    setup = make_party(tmp_path, file_bytes(n_rows=2000), allow_seeded_randomness=False, declared_rows=declared_rows)
    if weaken is not None:
        weaken(monkeypatch)
    seen = _capture_inputs(monkeypatch)
    recorder = Recorder().install(monkeypatch)
    release = release_of(setup, send_train(setup, MIXED))
    return setup, release, recorder.take(), seen


@pytest.mark.parametrize("declared_rows", [0, 1400], ids=["dp-count", "declared-rows"])
def test_a_party_s_marginals_release_is_audited_and_charged_once(tmp_path: Path, monkeypatch, declared_rows):
    setup, release, calls, seen = _serve(tmp_path, monkeypatch, declared_rows)
    params = release.params
    assert (params.marginals_share, params.marginals_bins) == (0.5, 4)
    assert params.sampler == "exact" and not params.seeded and params.dp
    assert params.depth_rule == ("declared-size" if declared_rows else "dp-count")
    d = release.forest.schema.n_features
    ours = [c for c in calls if c.site == "edprf_core._marginals"]
    assert len(ours) == d and all(len(c.draws) == 1 and c.draws[0].constructor == "make_laplace" for c in ours)

    account = _account(calls, release, seen)
    # each part spends epsilon - count_epsilon on its own rows; the row count reads them all
    assert account.count == pytest.approx(params.count_epsilon, rel=EXACT, abs=1e-12)
    assert account.marginals == pytest.approx(params.forest_epsilon, rel=EXACT)
    assert account.trees == pytest.approx(params.forest_epsilon, rel=EXACT)
    (entry,) = ledger(setup).entries()
    charged = float(entry.epsilon_exact)
    assert account.per_record <= charged * (1 + 1e-12) and account.per_record == pytest.approx(charged, rel=EXACT)
    assert charged == MIXED.epsilon

    text = federation_guarantee(release.forest, [PartySpend("harness", params.epsilon)])
    assert "NOT differentially private" not in text and "one-way marginals" in text
    printed = float(re.search(r"Spent for this run: epsilon = (\S+) per record at most", text).group(1))
    assert printed == pytest.approx(account.per_record, rel=1e-5)


# ------------------------------------------------------------------ the gate refuses weakened releases
def _marginals_at_the_full_epsilon(monkeypatch):
    """The histograms drawn at the request's full ε, not ε minus the row count's share (the release still
    claims the parameters' budget)."""
    real_fit, real_release = classifier.EDPRFClassifier.fit, classifier.release_marginals
    full: dict = {}

    def fit(self, X, y):
        full["epsilon"] = float(self.epsilon)
        return real_fit(self, X, y)

    def release(codes, y, n_codes, n_classes, epsilon, **kw):
        drawn = real_release(codes, y, n_codes, n_classes, full["epsilon"], **kw)
        return dataclasses.replace(drawn, epsilon=epsilon)

    monkeypatch.setattr(classifier.EDPRFClassifier, "fit", fit)
    monkeypatch.setattr(classifier, "release_marginals", release)


def _stash_full_inputs(monkeypatch) -> dict:
    """Keep the fit's full trees' codes and labels (its first encoding of each) for a weakened copy."""
    real_fit = classifier.EDPRFClassifier.fit
    real_features, real_labels = classifier.encode_features, classifier.encode_labels
    state: dict = {}

    def fit(self, X, y):
        state.clear()
        return real_fit(self, X, y)

    def features(X, schema, grid):
        out = real_features(X, schema, grid)
        state.setdefault("by_grid", {}).setdefault(grid.n_codes, out)
        return out

    def labels(y, schema):
        out = real_labels(y, schema)
        state.setdefault("labels", out)
        return out

    monkeypatch.setattr(classifier.EDPRFClassifier, "fit", fit)
    monkeypatch.setattr(classifier, "encode_features", features)
    monkeypatch.setattr(classifier, "encode_labels", labels)
    return state


def _marginals_on_all_rows(monkeypatch):
    """The histograms of ALL the rows (on top of the trees, which still get theirs): not disjoint."""
    state = _stash_full_inputs(monkeypatch)
    real_release = classifier.release_marginals

    def release(codes, y, n_codes, n_classes, epsilon, **kw):
        return real_release(state["by_grid"][tuple(n_codes)], state["labels"], n_codes, n_classes, epsilon, **kw)

    monkeypatch.setattr(classifier, "release_marginals", release)


def _trees_on_all_rows(monkeypatch):
    """The trees grown on ALL the rows (on top of the marginals, which still get theirs): not disjoint."""
    state = _stash_full_inputs(monkeypatch)
    real_build = classifier.build_forest

    def build(codes, labels, grid, n_classes, plan, sample_tree, sample_rows, rngs):
        full = state["by_grid"][tuple(grid.n_codes)]
        tree = np.arange(full.shape[0]) % len(rngs)  # every row to one tree, as parallel composition does
        order = np.argsort(tree, kind="stable")
        return real_build(full, state["labels"], grid, n_classes, plan, tree[order], order, rngs)

    monkeypatch.setattr(classifier, "build_forest", build)


def _histograms_without_noise(monkeypatch):
    monkeypatch.setattr(
        marginals_module,
        "discrete_laplace_counts",
        lambda counts, epsilon, sensitivity=1, rng=None: np.asarray(counts, dtype=np.int64),
    )


def _histograms_at_half_the_noise(monkeypatch):
    """Each histogram drawn at half its discrete Laplace scale (twice its ε) behind the same claimed budget."""
    real = marginals_module.discrete_laplace_counts

    def half(counts, epsilon, sensitivity=1, rng=None):
        return real(counts, 2.0 * epsilon, sensitivity, rng)

    monkeypatch.setattr(marginals_module, "discrete_laplace_counts", half)


WEAKENED = [
    (_marginals_at_the_full_epsilon, "more than its share"),
    (_histograms_at_half_the_noise, "for the true sensitivity 1, more than the"),
    (_marginals_on_all_rows, "saw other counts than the rows'"),
    (_trees_on_all_rows, "the parts must see disjoint rows"),
    (_histograms_without_noise, "draws per histogram, expected 1 each"),
]


@pytest.mark.parametrize(("weaken", "reason"), WEAKENED, ids=[w.__name__.strip("_") for w, _ in WEAKENED])
def test_the_gate_refuses_a_weakened_marginals_release(tmp_path: Path, monkeypatch, weaken, reason):
    """Each weakened copy is refused, for its own reason."""
    # a DP row count (declared_rows = 0): the marginals' budget is epsilon minus its share, not epsilon
    _, release, calls, seen = _serve(tmp_path, monkeypatch, 0, weaken)
    assert release.params.count_epsilon > 0
    with pytest.raises(AccountingError, match=re.escape(reason)):
        _account(calls, release, seen)
