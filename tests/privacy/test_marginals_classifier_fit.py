"""ε by instrumentation for a production ``DPMarginalsClassifier.fit`` (no seed, the exact samplers).

Every mechanism call of the fit is recorded at our mechanism API and at OpenDP's C entry point
(:mod:`._instrumentation`).  A fit must make, in order: exactly one DP row count (one value, on the
true number of rows) when the bins rule needs a size and none is declared, and none otherwise; then
exactly ``d`` histogram releases, audited by :func:`._instrumentation.account_marginals` (each on the
rows' exact histogram, each released as drawn).  Their real ε's, rebuilt from the noise OpenDP really
drew and the TRUE sensitivities (row count 1; a histogram 1 under add-remove, 2 under replace-one),
must sum, by sequential composition, to what the accountant was charged and what the guarantee prints.

Then weakened copies of the fit must be refused: the histograms given the full ε on top of the
count (1.05 faced, 1 charged: issue 19's finding 1 in this estimator), and a second, uncharged row count.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import edprf_core._marginals_classifier as marginals_classifier
from edprf_core import BudgetAccountant, DPMarginalsClassifier
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

from ..synthetic import make_data, make_schema
from ._instrumentation import AccountingError, MechanismCall, Recorder, TrueSensitivity, account_marginals
from .test_epsilon_by_instrumentation import _uncharged_extra_count  # the row count drawn twice

pytestmark = pytest.mark.privacy

EXACT = 1e-9
"""Relative agreement of the rebuilt ε with the charge (the samplers inflate scales by 1e-12)."""

N_ROWS = 1500
PUBLIC_ROWS = 1600  # a declared public size: not the exact count, which fit would warn about


def account_marginals_fit(
    calls: list[MechanismCall], clf: DPMarginalsClassifier, X, y, charged: float, truth: TrueSensitivity
) -> float:
    """The ε one record faces in the recorded fit; raises AccountingError unless it is ``charged`` and printed."""
    schema = clf.schema_
    queue = list(calls)
    count_eps = 0.0
    wants_count = clf.privacy_.size_rule == "dp-count"
    if len(queue) != schema.n_features + int(wants_count):
        raise AccountingError(
            f"a fit of {schema.n_features} histograms ({clf.privacy_.size_rule}) made {len(queue)} mechanism calls: "
            f"{[(c.api, c.shape) for c in queue]}"
        )
    if wants_count:
        count = queue.pop(0)
        if not count.api.endswith("discrete_laplace_counts") or int(np.prod(count.shape)) != 1:
            raise AccountingError(f"the bins came from a DP row count but the first call is {count.api} {count.shape}")
        if count.values.ravel().tolist() != [N_ROWS]:
            raise AccountingError(f"the DP row count was given {count.values.ravel().tolist()}, the fit had {N_ROWS}")
        count_eps = float(count.real_epsilons(truth.row_count, True)[0])
    codes = encode_features(X, schema, FeatureGrid.from_schema(schema, clf.n_bins_))
    histograms_eps = account_marginals(queue, clf.marginals_, codes, encode_labels(y, schema), truth)
    total = math.fsum([count_eps, histograms_eps])
    if not total <= charged * (1 + 1e-12) or abs(total - charged) > EXACT * charged:
        raise AccountingError(
            f"a record faces epsilon {total!r} (row count {count_eps!r} + histograms {histograms_eps!r}) "
            f"but {charged!r} was charged"
        )
    printed = float(re.search(r"epsilon = (\S+) differential privacy per record", clf.guarantee_).group(1))
    if abs(printed - total) > 1e-5 * total:
        raise AccountingError(f"the guarantee prints epsilon = {printed} but a record faces {total!r}")
    return total


def _fit(monkeypatch, *, weaken=None, **options):
    schema = make_schema(n_continuous=2, n_categorical=2, n_classes=3)
    X, y = make_data(schema, N_ROWS, seed=0)
    accountant = BudgetAccountant()
    recorder = Recorder().install(monkeypatch)
    if weaken is not None:
        weaken(monkeypatch)
    clf = DPMarginalsClassifier(schema, accountant=accountant, **options).fit(X, y)  # random_state=None
    return recorder.take(), clf, X, y, accountant.total


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
@pytest.mark.parametrize(
    "options",
    [{}, {"epsilon": 0.3, "count_epsilon_share": 0.5}, {"n_rows_public": PUBLIC_ROWS}, {"n_bins": 7, "epsilon": 2.0}],
    ids=["dp-count", "dp-count-half", "declared-rows", "given-bins"],
)
def test_a_production_fit_charges_exactly_what_its_noise_costs(monkeypatch, relation, options):
    calls, clf, X, y, charged = _fit(monkeypatch, relation=relation, **options)
    epsilon = options.get("epsilon", 1.0)
    assert charged == epsilon and clf.privacy_.sampler == "exact" and clf.dp_
    d = clf.schema_.n_features
    counts = 0 if "n_rows_public" in options or "n_bins" in options else 1
    assert clf.privacy_.size_rule == ("dp-count" if counts else clf.privacy_.size_rule)
    assert len(calls) == counts + d  # one DP row count exactly when no size is declared, then d histograms
    total = account_marginals_fit(calls, clf, X, y, charged, TrueSensitivity(relation))
    assert total == pytest.approx(epsilon, rel=EXACT)


# ------------------------------------------------------------------ the checker refuses weakened fits
def _histograms_at_the_full_epsilon(monkeypatch):
    """The histograms spend the whole ε on top of the DP row count (no sequential composition)."""
    monkeypatch.setattr(marginals_classifier.MarginalsParameters, "histogram_epsilon", property(lambda p: p.epsilon))


@pytest.mark.parametrize(
    ("weaken", "reason"),
    [
        (
            _histograms_at_the_full_epsilon,
            r"faces epsilon 1\.0[45]\d* \(row count 0\.0[45]\d* \+ histograms (0\.9999|1\.0)\d*\) but 1\.0 was charged",
        ),
        (_uncharged_extra_count, r"a fit of 4 histograms \(dp-count\) made 6 mechanism calls"),
    ],
    ids=["histograms-at-the-full-epsilon", "a-second-row-count"],
)
def test_the_checker_refuses_a_weakened_fit(monkeypatch, weaken, reason):
    calls, clf, X, y, charged = _fit(monkeypatch, weaken=weaken)
    with pytest.raises(AccountingError, match=reason):
        account_marginals_fit(calls, clf, X, y, charged, TrueSensitivity())
