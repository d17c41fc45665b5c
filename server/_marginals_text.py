"""What the report and the guarantee say about the global model's marginals part (one-way class histograms).

The parties that were asked for a marginals part (``marginals-share > 0``) each release, besides their trees,
one noisy class-count histogram per feature of a random share of their rows, disjoint from their trees' rows;
the global model sums them on the consortium's grid (each party bounded first: ``edprf_core.marginals``) and
mixes the sum's class probabilities with the trees' (weight ``marginals_share``).  Everything here reads the
merged forest and, for the accuracy of each part alone, the coordinator's own test rows: no party's ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edprf_core import DPForest
from edprf_core.count_text import count_text
from edprf_core.encoding import encode_labels
from edprf_core.marginals import marginals_release_epsilons

__all__ = ["marginals_guarantee", "marginals_lines", "marginals_record"]


def marginals_record(forest: DPForest, X_test: pd.DataFrame | None = None, y_test: pd.Series | None = None) -> dict:
    """The report's ``marginals`` entry: ``{}`` without a marginals part, else its share, grid, parties, the ε
    each party released its histograms at (``release_epsilon``, the distinct values, split over the ``d``
    features), the effective ε of the sum's noise (``noise_epsilon``: a description of the noise, not a privacy
    cost), and (with test rows) the accuracy of the trees and of the marginals alone."""
    m = forest.marginals
    if m is None:
        return {}
    parties = [label for label, p, _ in forest.parts if p.marginals_share > 0]
    out: dict[str, Any] = {
        "share": float(forest.marginals_share),
        "bins": int(forest.marginals_bins),
        "parties": parties,
        # the sum's noise is that of one release at this epsilon (1 / sqrt(sum 1 / eps_p**2)): a description of
        # the noise for scoring, NOT a privacy cost; what each party spent is release_epsilon
        "noise_epsilon": float(m.epsilon),
        "release_epsilon": marginals_release_epsilons(forest.parts),
    }
    if X_test is not None and y_test is not None and len(y_test):
        truth = encode_labels(y_test, forest.schema)
        trees = forest.trees_proba(X_test)
        out["test_accuracy_trees_alone"] = float(np.mean(np.argmax(trees, axis=1) == truth))
        out["test_accuracy_marginals_alone"] = float(
            np.mean(np.argmax(forest.marginals_proba(X_test), axis=1) == truth)
        )
    return out


def marginals_guarantee(forest: DPForest) -> str:
    """One sentence for the run's guarantee ("" without a marginals part)."""
    record = marginals_record(forest)
    if not record:
        return ""
    n = len(record["parties"])
    return (
        f"The model's marginals part sums the one-way class histograms of {n} of its {len(forest.parts)} parties on "
        f"one {record['bins']}-bin public grid (each party's cells bounded first) and weighs them "
        f"{record['share']:.2f} against the trees; each party released them on a random share of its rows "
        "disjoint from its trees' rows (parallel composition), within the release epsilon above, and the sum is "
        "post-processing."
    )


def marginals_lines(record: dict[str, Any]) -> list[str]:
    """The summary's line about the marginals part (none without one)."""
    if not record:
        return []
    whose = count_text(len(record["parties"]), "party's", "parties'")
    spent = record.get("release_epsilon") or []
    each = (
        ""
        if not spent
        else f"each released at epsilon {spent[0]:g}"
        if len(spent) == 1
        else f"released at epsilon {spent[0]:g} to {spent[-1]:g}"
    )
    line = (
        f"marginals part: {whose} histograms{' (' + each + ', split over the features)' if each else ''} summed on "
        f"a {record['bins']}-bin grid, weight {record['share']:.2f} against the trees (the sum's noise is that of "
        f"one release at epsilon {record['noise_epsilon']:.3g}: a description of the noise, not a privacy cost)"
    )
    if "test_accuracy_marginals_alone" in record:
        line += (
            f"; on the test data alone: trees {record['test_accuracy_trees_alone']:.4f}, "
            f"marginals {record['test_accuracy_marginals_alone']:.4f}"
        )
    return [line]
