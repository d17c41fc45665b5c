"""ε by instrumentation for a production ``EDPRFClassifier.fit`` with a marginals part (no seed, exact samplers).

With ``marginals_share > 0`` a fit makes, in order: the DP row count (when a rule needs a size and none is
declared), then ``d`` histogram releases on the rows assigned to the marginals part, then (with a residual
pass) ``d`` residual-sum releases on the same rows, then the trees on the other rows.  The audit rebuilds every
ε from the noise OpenDP really drew and the TRUE sensitivities:

- the histograms (:func:`._instrumentation.account_marginals`) must be the exact histograms of the rows the
  assignment gave the marginals part, each released as drawn, each costing at most its share ``epsilon / d`` of
  the histograms' budget;
- a residual pass's sums (:func:`._instrumentation.account_residual_pass`) must be the exact sums of those
  rows' quantised residuals against the model replayed from the released values alone, each costing at most
  its share of the pass's budget for the true sensitivity ``Q``; histograms and pass must spend ``epsilon -
  count_epsilon`` together (sequential composition on the part's rows);
- the trees (:func:`._instrumentation.charged_epsilon_of_fit`) must see exactly the other rows (every one of
  them in one leaf), and their costliest root-to-leaf path costs ``epsilon - count_epsilon``;
- the two parts hold disjoint rows, so a record faces the row count plus the larger of the two (parallel
  composition), which must equal what the accountant charged and what the guarantee prints.

The assignment is captured from ``marginals_rows`` (public randomness that never reads the data); everything
the mechanisms saw is recounted here from the rows.  Then weakened fits must be refused: the marginals on all
rows (each record in both parts), the marginals at the full ε on top of the row count, and the trees given
the marginals' rows too.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

import edprf_core._classifier as classifier
from edprf_core import BudgetAccountant, EDPRFClassifier
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

from ..synthetic import make_data, make_schema
from ._instrumentation import (
    ADD_REMOVE,
    RESIDUAL_SITE,
    AccountingError,
    Recorder,
    TrueSensitivity,
    account_marginals,
    account_residual_pass,
    charged_epsilon_of_fit,
    check_mechanism_inputs,
    check_released_values,
)

pytestmark = pytest.mark.privacy

EXACT = 1e-9
"""Relative agreement of the rebuilt ε with the charge (the samplers inflate scales by 1e-12)."""

N_ROWS = 1500
PUBLIC_ROWS = 1600  # a declared public size: not the exact count, which fit would warn about


def account_mixed_fit(calls, clf: EDPRFClassifier, X, y, mask, charged: float, truth: TrueSensitivity) -> float:
    """The ε one record faces in the recorded fit; raises AccountingError unless it is ``charged`` and printed."""
    forest = clf.forest_
    schema = forest.schema
    params = forest.parts[0][1]
    d = schema.n_features
    n_count = int(params.depth_rule == "dp-count")
    histograms = calls[n_count : n_count + d]
    n_pass = d if forest.marginals is not None and forest.marginals.residual_pass is not None else 0
    residual = calls[n_count + d : n_count + d + n_pass]
    tree_calls = calls[:n_count] + calls[n_count + d + n_pass :]
    if forest.marginals is None or len(histograms) != d:
        raise AccountingError(f"a fit with a marginals part made {len(calls)} calls, expected {d} histograms")
    if any(c.site == RESIDUAL_SITE for c in histograms + tree_calls):
        raise AccountingError("residual sums were released, but the forest carries no residual pass to say so")
    labels = encode_labels(y, schema)
    codes = encode_features(X, schema, FeatureGrid.from_schema(schema, forest.marginals_bins))
    marginals_eps = account_marginals(histograms, forest.marginals, codes[mask], labels[mask], truth)
    if n_pass:
        marginals_eps += account_residual_pass(residual, forest.marginals, codes[mask], labels[mask], truth)
    count_eps, trees_total = charged_epsilon_of_fit(tree_calls, forest, truth)
    check_mechanism_inputs(tree_calls, forest, len(labels), tree_rows=int((~mask).sum()))
    check_released_values(tree_calls, forest)
    total = count_eps + max(trees_total - count_eps, marginals_eps)  # disjoint rows: parallel composition
    if not total <= charged * (1 + 1e-12) or abs(total - charged) > EXACT * charged:
        raise AccountingError(
            f"a record faces epsilon {total!r} (row count {count_eps!r}, trees {trees_total - count_eps!r}, "
            f"marginals {marginals_eps!r}) but {charged!r} was charged"
        )
    printed = float(re.search(r"epsilon = (\S+) differential privacy per record", forest.guarantee()).group(1))
    if abs(printed - total) > 1e-5 * total:
        raise AccountingError(f"the guarantee prints epsilon = {printed} but a record faces {total!r}")
    return total


def _fit(monkeypatch, *, weaken=None, relation="add-remove", **options):
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=2)
    X, y = make_data(schema, N_ROWS, seed=0)
    masks: list[np.ndarray] = []
    real_rows = classifier.marginals_rows

    def capture(n_rows, share, rng):
        mask = real_rows(n_rows, share, rng)
        masks.append(mask.copy())
        return mask

    monkeypatch.setattr(classifier, "marginals_rows", capture)
    accountant = BudgetAccountant()
    recorder = Recorder().install(monkeypatch)
    if weaken is not None:
        weaken(monkeypatch, X, y)
    clf = EDPRFClassifier(schema, accountant=accountant, relation=relation, **options).fit(X, y)
    assert clf.privacy_.sampler == "exact" and len(masks) == 1
    return recorder.take(), clf, X, y, masks[0], accountant.total


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"marginals_share": 0.5},
        {"marginals_share": 0.3, "n_rows_public": PUBLIC_ROWS},
        {"marginals_share": 0.6, "leaf": "label", "split_mode": "multiway", "n_trees": 2, "max_depth": 2, "n_bins": 4},
        {"marginals_share": 0.5, "residual_pass": True, "n_rows_public": PUBLIC_ROWS},
    ],
    ids=["auto", "half", "declared-rows", "label-multiway-fixed", "half-with-pass"],
)
def test_a_mixed_fit_charges_exactly_what_its_noise_costs(monkeypatch, options):
    calls, clf, X, y, mask, charged = _fit(monkeypatch, **options)
    assert clf.marginals_share_ > 0 and 0 < mask.sum() < N_ROWS
    # the automatic rule runs a pass here (1500 rows, 4 features, epsilon 1: n eps / d = 375 >= 220)
    assert clf.residual_pass_ == (options.get("residual_pass", "auto") is True or not options)
    assert account_mixed_fit(calls, clf, X, y, mask, charged, ADD_REMOVE) == pytest.approx(1.0, rel=EXACT)


@pytest.mark.parametrize("residual_pass", [False, True])
def test_a_mixed_fit_under_replace_one_is_charged_at_doubled_sensitivities(monkeypatch, residual_pass):
    calls, clf, X, y, mask, charged = _fit(
        monkeypatch, relation="replace-one", marginals_share=0.5, residual_pass=residual_pass
    )
    assert clf.residual_pass_ == residual_pass
    assert account_mixed_fit(calls, clf, X, y, mask, charged, TrueSensitivity("replace-one")) == pytest.approx(
        1.0, rel=EXACT
    )


def test_more_than_two_classes_get_no_marginals_part(monkeypatch):
    """The automatic share is 0 for three classes: the fit's calls are exactly a trees-only fit's."""
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=3)
    X, y = make_data(schema, N_ROWS, seed=0)
    accountant = BudgetAccountant()
    recorder = Recorder().install(monkeypatch)
    clf = EDPRFClassifier(schema, accountant=accountant).fit(X, y)
    assert clf.marginals_share_ == 0 and clf.forest_.marginals is None
    _, total = charged_epsilon_of_fit(recorder.take(), clf.forest_)  # refuses any call beyond the trees'
    assert total == pytest.approx(accountant.total, rel=EXACT)


# ------------------------------------------------------------------ weakened fits the audit must refuse
def _marginals_on_all_rows(monkeypatch, X, y):
    """Each record is counted by the marginals whatever its part: the parts are no longer disjoint."""
    real = classifier.release_marginals
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=2)

    def everyone(codes, labels, n_codes, n_classes, epsilon, **kwargs):
        return real(_codes_like(X, schema, n_codes), encode_labels(y, schema), n_codes, n_classes, epsilon, **kwargs)

    monkeypatch.setattr(classifier, "release_marginals", everyone)


def _codes_like(X, schema, n_codes):
    """All rows' codes on the grid whose code counts are ``n_codes`` (found among the public grids)."""
    for bins in range(2, 64):
        grid = FeatureGrid.from_schema(schema, bins)
        if tuple(grid.n_codes) == tuple(n_codes):
            return encode_features(X, schema, grid)
    raise AssertionError(f"no public grid has code counts {n_codes}")


def _marginals_at_the_full_epsilon(monkeypatch, X, y):
    """The marginals spend the whole ε on top of the DP row count (issue 19's finding 1, in this part)."""
    real = classifier.release_marginals

    def full(codes, labels, n_codes, n_classes, epsilon, **kwargs):
        return real(codes, labels, n_codes, n_classes, 1.0, **kwargs)

    monkeypatch.setattr(classifier, "release_marginals", full)


def _pass_at_half_its_noise(monkeypatch, X, y):
    """The pass draws at twice its budget (half the noise) while the release claims its share."""
    real = classifier.release_residual_pass

    def doubled(codes, labels, marginals, epsilon, **kwargs):
        out = real(codes, labels, marginals, 2 * epsilon, **kwargs)
        claimed = dataclasses.replace(out.residual_pass, epsilon=epsilon)
        return dataclasses.replace(out, residual_pass=claimed)

    monkeypatch.setattr(classifier, "release_residual_pass", doubled)


def _pass_on_all_rows(monkeypatch, X, y):
    """The pass sums every record's residual, the trees' rows too: the parts are no longer disjoint."""
    real = classifier.release_residual_pass
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=2)

    def everyone(codes, labels, marginals, epsilon, **kwargs):
        all_codes = _codes_like(X, schema, marginals.n_codes)
        return real(all_codes, encode_labels(y, schema), marginals, epsilon, **kwargs)

    monkeypatch.setattr(classifier, "release_residual_pass", everyone)


def _pass_from_another_model(monkeypatch, X, y):
    """The pass starts from another model than the released histograms' (here their counts shifted by 7): its sums
    are then not what a replay of the release gives, so whatever that model read, the audit cannot vouch for it."""
    import edprf_core._residual_pass as residual_pass

    real_tables = residual_pass.naive_bayes_tables

    def other_tables(marginals, **kwargs):
        return real_tables(dataclasses.replace(marginals, counts=tuple(h + 7 for h in marginals.counts)), **kwargs)

    monkeypatch.setattr(residual_pass, "naive_bayes_tables", other_tables)


WEAKENINGS = {
    "marginals on all rows": (_marginals_on_all_rows, "histogram 0's mechanism saw other counts", {}),
    "marginals at the full epsilon": (
        _marginals_at_the_full_epsilon,
        r"a record faces epsilon 1\.04.* but 1\.0 was charged",
        {},
    ),
    "pass at half its noise": (
        _pass_at_half_its_noise,
        r"residual sum 0's noise costs epsilon 0\.189.* more than its share 0\.095",
        {"residual_pass": True},
    ),
    "pass on all rows": (_pass_on_all_rows, "residual sum 0's mechanism saw other sums", {"residual_pass": True}),
    "pass from another model": (
        _pass_from_another_model,
        "residual sum 0's mechanism saw other sums",
        {"residual_pass": True},
    ),
}


@pytest.mark.parametrize("weakening", sorted(WEAKENINGS))
def test_the_audit_refuses_a_weakened_mixed_fit(monkeypatch, weakening):
    weaken, reason, options = WEAKENINGS[weakening]
    calls, clf, X, y, mask, charged = _fit(monkeypatch, weaken=weaken, marginals_share=0.5, **options)
    with pytest.raises(AccountingError, match=reason):
        account_mixed_fit(calls, clf, X, y, mask, charged, ADD_REMOVE)


def test_the_audit_refuses_trees_that_also_see_the_marginals_rows(monkeypatch):
    """The trees given every row (n_trees=1 so the row assignment is trivial): the leaves saw too many rows."""
    real_build = classifier.build_forest
    seen = {}

    def build(codes, labels, grid, n_classes, plan, sample_tree, sample_rows, generators):
        schema = make_schema(n_continuous=2, n_categorical=2, n_classes=2)
        all_codes, all_labels = encode_features(seen["X"], schema, grid), encode_labels(seen["y"], schema)
        everyone = np.arange(all_codes.shape[0], dtype=np.int64)
        return real_build(all_codes, all_labels, grid, n_classes, plan, np.zeros_like(everyone), everyone, generators)

    def weaken(monkeypatch, X, y):
        seen.update(X=X, y=y)
        monkeypatch.setattr(classifier, "build_forest", build)

    calls, clf, X, y, mask, charged = _fit(monkeypatch, weaken=weaken, marginals_share=0.5, n_trees=1)
    with pytest.raises(AccountingError, match="the leaves' mechanisms saw 1500 rows"):
        account_mixed_fit(calls, clf, X, y, mask, charged, ADD_REMOVE)


def test_the_charge_covers_both_parts_once(monkeypatch):
    """The accountant is charged epsilon once for a mixed fit (parallel composition), not once per part."""
    _, clf, _, _, _, charged = _fit(monkeypatch, marginals_share=0.5)
    assert math.isclose(charged, 1.0) and clf.forest_.marginals.part_epsilon == pytest.approx(
        1.0 - clf.privacy_.count_epsilon
    )
