"""Empirical audits of everything a fit releases, through the public estimator on the production path.

Every fit here is ``EDPRFClassifier(schema, ...)`` with ``random_state=None``
and ``sampler="exact"`` (OpenDP's samplers, randomness from the operating
system), ``max_depth="auto"`` without a declared size (so the DP row count
runs and the trees get what it leaves, as in a party's default request) and
``count_epsilon_share = 0.5`` (the largest allowed: a count whose ε is spent
twice, or not charged to the trees, shows up as a loss twice the budget).
Tiny datasets and ``max_depth_cap`` fix the shape.  The fits hold no marginals
part (``marginals_share=0``): these pairs are worst cases for the trees'
mechanisms, and a random share of their few rows sent to the marginals would
blur them; the marginals release is audited exactly, from the noise OpenDP
draws, by ``test_marginals_release.py``, ``test_mixed_fit.py`` (an estimator
fit with both parts) and ``test_party_marginals_audit.py`` (a party's release).

Each audit is a worst-case neighbouring pair D, D' = D + one record, an event
per released output where the log-ratio reaches that output's ε, and the
Clopper-Pearson lower bound of the loss (:mod:`tests.privacy._audit`):

- split: two binary features that both separate D perfectly (utility 0, a
  tie); the record ``(f1=0, f2=1, y=1)`` lands, under f1, as the only class-1
  row of a pure class-0 child (weighted Gini up by ``2m/(m+1)``, nearly the
  sensitivity 2) and, under f2, in a pure class-1 child (no change).  Event:
  the root splits on f1.  Budget: the root layer's share of the trees' ε.
- leaf label (``leaf="label"``): one binary feature (one candidate, so the
  root split is fixed); the leaf ``f1=0`` holds ``(5, 5)`` rows per class and
  the record is one more of class 1.  Event: that leaf says class 0.
- leaf counts (``leaf="counts"``): the same leaf; event: its released class-1
  count is at most 5 (the tail the record pushes against).
- the DP row count and the shape it picks: event ``n_rows_estimate_ <= n``
  (n the rows of D), and the shape events, chosen so that the public rule
  switches exactly between ``n`` and ``n + 1``: ``n_bins_ == 3`` (bins rule:
  ``n * eps < 250``) on the leaf-label fits, ``max_depth_ == 1`` on fits of
  their own (depth rule with cap 2).

Each audit runs three times, at the same sample sizes: honest (every bound
<= its ε), with the OpenDP samplers at half their noise scale under an honest
looking privacy map (every bound > its ε), and with no noise at all.  At
``count_epsilon_share = 0.5`` a count that is not charged to the trees (the
trees planned from the fit's whole ε) doubles the budget of every tree output:
the same law as half the noise, so the half-noise power covers it too.  The
sizes are the smallest for which the half-noise run fails with probability
below ``BETA`` under the exact laws of the events
(:func:`test_sample_sizes_give_the_claimed_power` checks them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from edprf_core import EDPRFClassifier, Schema
from edprf_core._exact_selection import UTILITY_SCALE

from ._audit import (
    ALPHA,
    BETA,
    AuditResult,
    assured_lower_bound,
    discrete_laplace_tail_law,
    noiseless_size,
    opendp_noise_scaled,
    permute_and_flip_tie_law,
)
from ._audit_rows import LEAF_SCHEMA, SPLIT_SCHEMA, rows

pytestmark = pytest.mark.privacy

SHARE = 0.5
"""``count_epsilon_share`` of every fit: the DP row count gets half the fit's ε, the trees the other half."""

SPLIT_ROWS_PER_SIDE = 100
"""``m``: rows of each pure group of the split pair (the record moves the f1 utility by ``2m/(m+1)`` of 2)."""


def harmonic_root_share(n_layers: int) -> float:
    """Share of a tree's ε the harmonic schedule gives layer 1: ``(1/L) / H_L`` (eDPRF formula 9)."""
    return (1.0 / n_layers) / sum(1.0 / j for j in range(1, n_layers + 1))


# ------------------------------------------------------------------ events
def _root_feature(clf: EDPRFClassifier) -> int:
    return int(clf.forest_.trees.feature[0])


def _leaf_f1_is_0(clf: EDPRFClassifier) -> int:
    """Node index of the leaf that holds the rows with ``f1 = 0`` (the root's left child: category 0)."""
    trees = clf.forest_.trees
    assert trees.feature[0] == 0 and trees.split[0] == 0, "the leaf audits need the root split on f1"
    return int(trees.first_child[0])


@dataclass(frozen=True)
class Event:
    """An event on one released output, its budget, and its exact law on (D, D') given a noise factor."""

    name: str
    epsilon: float
    law: Callable[[float], tuple[float, float]]
    hit: Callable[[EDPRFClassifier], bool]


@dataclass(frozen=True)
class FitAudit:
    """A neighbouring pair for the estimator, the events counted on each fit, and the sample sizes."""

    name: str
    schema: Schema
    options: dict
    d: tuple[pd.DataFrame, pd.Series]
    d_prime: tuple[pd.DataFrame, pd.Series]
    events: tuple[Event, ...]
    n_a: int
    n_b: int
    mirror: FitAudit | None = None

    @property
    def alpha(self) -> float:
        return ALPHA / len(self.events)

    def run(self, n_a: int, n_b: int) -> list[AuditResult]:
        hits_a = _count_hits(self, *self.d, n_a)
        hits_b = _count_hits(self, *self.d_prime, n_b)
        return [
            AuditResult(f"{self.name} / {e.name}", e.epsilon, int(a), n_a, int(b), n_b, self.alpha)
            for e, a, b in zip(self.events, hits_a, hits_b)
        ]


def _count_hits(audit: FitAudit, X: pd.DataFrame, y: pd.Series, n: int) -> np.ndarray:
    """Fit ``n`` times on ``(X, y)`` (production path) and count each event."""
    clf = EDPRFClassifier(
        audit.schema,
        random_state=None,
        sampler="exact",
        count_epsilon_share=SHARE,
        max_depth="auto",
        n_trees=1,
        **audit.options,
        marginals_share=0.0,  # the trees' mechanisms alone (module docstring)
    )
    hits = np.zeros(len(audit.events), dtype=np.int64)
    for _ in range(n):
        clf.fit(X, y)
        hits += [bool(e.hit(clf)) for e in audit.events]
    return hits


def _scaled_tail(scale: float) -> Callable[[float], tuple[float, float]]:
    return lambda factor: discrete_laplace_tail_law(scale * factor)


# ------------------------------------------------------------- the audits
def _split_audit() -> FitAudit:
    """Root split: E = 9, trees 4.5, root layer (L = 2) 1.5."""
    epsilon = 9.0
    eps_root = (1 - SHARE) * epsilon * harmonic_root_share(2)
    m = SPLIT_ROWS_PER_SIDE
    sensitivity = (
        2 * UTILITY_SCALE + 1
    )  # integer utilities (edprf_core._exact_selection), monotone: scale = Delta / eps
    shift = (UTILITY_SCALE * 2 * m) // (m + 1)  # floor(K (N^2 - S) / N) of the child (m, 1)
    gap = shift * eps_root / sensitivity

    def law(factor: float) -> tuple[float, float]:
        return permute_and_flip_tie_law(gap / factor)

    d = rows(SPLIT_SCHEMA, (m, (0, 0, 0)), (m, (1, 1, 1)))
    options = {"epsilon": epsilon, "max_depth_cap": 1, "n_bins": 2, "leaf": "label"}

    def make(record: tuple[int, ...], feature: int, mirror: FitAudit | None) -> FitAudit:
        event = Event(f"root splits on f{feature + 1}", eps_root, law, lambda clf: _root_feature(clf) == feature)
        return FitAudit(
            "split",
            SPLIT_SCHEMA,
            options,
            d,
            rows(SPLIT_SCHEMA, (m, (0, 0, 0)), (m, (1, 1, 1)), (1, record)),
            (event,),
            n_a=872,
            n_b=1744,
            mirror=mirror,
        )

    # the mirror pair lowers f2 instead: without noise, a tie goes one way or the other, and one of the two
    # pairs sees it (a noiseless argmax that breaks the tie towards the lowered candidate's rival is blind on one)
    return make((0, 1, 1), 0, make((0, 1, 0), 1, None))


LEAF_ROWS = 111
"""Rows of D for the leaf-label fits: 111 * 2.25 < 250 <= 112 * 2.25, so the bins rule switches at D'."""


def _leaf_label_audit() -> FitAudit:
    """Leaf label, the DP row count, the bins it picks: E = 4.5, count 2.25, trees 2.25, leaf (L = 2) 1.5."""
    epsilon = 4.5
    eps_count = SHARE * epsilon
    eps_leaf = (1 - SHARE) * epsilon * (1 - harmonic_root_share(2))
    groups = ((5, (0, 0)), (5, (0, 1)), (LEAF_ROWS - 10, (1, 1)))
    d = rows(LEAF_SCHEMA, *groups)
    options = {"epsilon": epsilon, "max_depth_cap": 1, "n_bins": "auto", "leaf": "label"}
    count_law = _scaled_tail(1.0 / eps_count)
    shared = (
        Event("DP row count <= n", eps_count, count_law, lambda clf: clf.n_rows_estimate_ <= LEAF_ROWS),
        Event("bins rule picks 3 bins", eps_count, count_law, lambda clf: clf.n_bins_ == 3),
    )

    def make(label: int, mirror: FitAudit | None) -> FitAudit:
        event = Event(
            f"leaf f1=0 says class {1 - label}",
            eps_leaf,
            lambda factor: permute_and_flip_tie_law(eps_leaf / factor),
            lambda clf: clf.forest_.trees.leaf_class[_leaf_f1_is_0(clf)] == 1 - label,
        )
        return FitAudit(
            "leaf label",
            LEAF_SCHEMA,
            options,
            d,
            rows(LEAF_SCHEMA, *groups, (1, (0, label))),
            (event, *shared),
            n_a=1009,
            n_b=1766,
            mirror=mirror,
        )

    return make(1, make(0, None))


def _leaf_counts_audit() -> FitAudit:
    """Leaf count vector: E = 4.5, trees 2.25, leaf 1.5 (discrete Laplace, sensitivity 1)."""
    epsilon = 4.5
    eps_leaf = (1 - SHARE) * epsilon * (1 - harmonic_root_share(2))
    groups = ((5, (0, 0)), (5, (0, 1)), (20, (1, 1)))
    event = Event(
        "leaf f1=0 class-1 count <= 5",
        eps_leaf,
        _scaled_tail(1.0 / eps_leaf),
        lambda clf: clf.forest_.trees.leaf_counts[_leaf_f1_is_0(clf), 1] <= 5,
    )
    return FitAudit(
        "leaf counts",
        LEAF_SCHEMA,
        {"epsilon": epsilon, "max_depth_cap": 1, "n_bins": 2, "leaf": "counts"},
        rows(LEAF_SCHEMA, *groups),
        rows(LEAF_SCHEMA, *groups, (1, (0, 1))),
        (event,),
        n_a=241,
        n_b=603,
    )


DEPTH_ROWS = 78
"""Rows of D for the depth fits: with 1.5 left for the trees, the depth rule (cap 2) gives 1 at 78 rows, 2 at 79."""


def _depth_audit() -> FitAudit:
    """The DP row count and the depth it picks: E = 3, count 1.5."""
    epsilon = 3.0
    eps_count = SHARE * epsilon
    groups = ((DEPTH_ROWS // 2, (0, 0)), (DEPTH_ROWS - DEPTH_ROWS // 2, (1, 1)))
    law = _scaled_tail(1.0 / eps_count)
    events = (
        Event("DP row count <= n", eps_count, law, lambda clf: clf.n_rows_estimate_ <= DEPTH_ROWS),
        Event("depth rule picks depth 1", eps_count, law, lambda clf: clf.max_depth_ == 1),
    )
    return FitAudit(
        "depth",
        LEAF_SCHEMA,
        {"epsilon": epsilon, "max_depth_cap": 2, "n_bins": 2, "leaf": "label"},
        rows(LEAF_SCHEMA, *groups),
        rows(LEAF_SCHEMA, *groups, (1, (0, 0))),
        events,
        n_a=253,
        n_b=633,
    )


AUDITS = {a.name: a for a in (_split_audit(), _leaf_label_audit(), _leaf_counts_audit(), _depth_audit())}


def _report(record_property, results: list[AuditResult], mode: str) -> None:
    for r in results:
        print(f"[{mode}] {r}")
        record_property(f"{mode}: {r.name}", f"{r.lower_bound:.4f} (eps {r.epsilon:.4g})")


# ------------------------------------------------------------------ tests
def test_the_public_rules_switch_between_the_neighbours():
    """The shape events are tight only if the public rules switch exactly between n and n + 1 rows."""
    from edprf_core.shape import public_bins, public_depth

    label = AUDITS["leaf label"]
    forest_eps = (1 - SHARE) * label.options["epsilon"]
    assert public_bins(LEAF_ROWS, forest_eps) == 3 and public_bins(LEAF_ROWS + 1, forest_eps) > 3
    forest_eps = (1 - SHARE) * AUDITS["depth"].options["epsilon"]
    assert public_depth(DEPTH_ROWS, 1, forest_eps, max_depth=2) == 1
    assert public_depth(DEPTH_ROWS + 1, 1, forest_eps, max_depth=2) == 2


@pytest.mark.parametrize("name", list(AUDITS))
def test_sample_sizes_give_the_claimed_power(name):
    """Under the exact laws of the events with half the noise, each bound exceeds its ε with
    probability >= 1 - BETA (per test, split over its events); honest laws sit at or below ε."""
    audit = AUDITS[name]
    k = len(audit.events)
    for e in audit.events:
        p, q = e.law(1.0)
        assert math.log(p / q) <= e.epsilon * (1 + 1e-9)
        p, q = e.law(0.5)
        assert assured_lower_bound(p, q, audit.n_a, audit.n_b, ALPHA / k, BETA / k) > e.epsilon, e.name


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AUDITS))
def test_released_output_stays_within_its_epsilon(name, record_property):
    audit = AUDITS[name]
    results = audit.run(audit.n_a, audit.n_b)
    _report(record_property, results, "honest")
    for r in results:
        assert r.lower_bound <= r.epsilon, str(r)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AUDITS))
def test_audit_catches_the_samplers_at_half_noise(name, record_property):
    """The same audit, the same sizes, with OpenDP's noise scale halved behind an honest privacy map."""
    audit = AUDITS[name]
    with opendp_noise_scaled(0.5):
        results = audit.run(audit.n_a, audit.n_b)
    _report(record_property, results, "half noise")
    for r in results:
        assert r.lower_bound > r.epsilon, str(r)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AUDITS))
def test_audit_catches_outputs_without_noise(name, record_property):
    """With no noise at all the events are deterministic: D always in, D' never (or, for a tie broken away
    from the lowered candidate, the mirror pair's).  A handful of runs suffices; the full audit has more."""
    audit = AUDITS[name]
    n = max(noiseless_size(e.epsilon, audit.alpha) for e in audit.events)
    with opendp_noise_scaled(0.0):
        results = audit.run(n, n)
        mirrored = audit.mirror.run(n, n) if audit.mirror is not None else results
    _report(record_property, results + (mirrored if audit.mirror is not None else []), "no noise")
    for r, m in zip(results, mirrored):
        assert max(r.lower_bound, m.lower_bound) > r.epsilon, f"{r}; mirror {m}"
