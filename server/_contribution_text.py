"""The contribution report in plain words, for a clinical analyst (the statistics stay in the JSON).

Each party's line says how much its trees improve predictions on the coordinator's validation
rows (the probability they put on the right answer above what guessing from the class shares
gives: :func:`server._contribution.probability_lift`) and whether that is significantly below
the other parties (the quality flag), or that no comparison was made.  Post-processing of the
report: no ε.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ._contribution import LIFT_SHARE, MIN_PARTIES_FOR_FLAGS

__all__ = ["contribution_lines", "contribution_verdict"]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def contribution_verdict(c: dict[str, Any], alpha: float | None, n_parties: int) -> str:
    """How a party compares with the others, in words (the end of its contribution line)."""
    if c.get("flag_inconclusive", True) or c.get("lift_threshold") is None:
        if n_parties < MIN_PARTIES_FOR_FLAGS:
            return f"not compared with the others (it takes at least {MIN_PARTIES_FOR_FLAGS} parties)"
        return (
            "not compared with the others (the parties are too uneven to single one out, or the data hold "
            "almost a single class)"
        )
    level = f" at the {alpha:g} level" if alpha else ""
    p_value = _number(c.get("p_value"))
    detail = f" (p = {p_value:.1e})" if p_value is not None else ""
    if c.get("flagged"):
        return (
            f"SIGNIFICANTLY BELOW the other parties{level}{detail}: less than a tenth "
            f"({100 * c['lift_threshold']:.1f} points) of their typical improvement "
            f"({100 * c['lift_threshold'] / LIFT_SHARE:.1f} points); check this party's data"
        )
    return f"not significantly below the other parties{level}"


def contribution_lines(contributions: Sequence[dict[str, Any]], alpha: float | None = None) -> list[str]:
    """One line per party, in plain words, from the report's ``contributions`` entries."""
    lines = []
    for c in contributions:
        lift = _number(c.get("probability_lift"))
        accuracy = _number(c.get("accuracy"))
        trees = int(c.get("n_trees", 0))
        subject, verb, they = (
            (f"its {trees} trees", "raise", "they are") if trees != 1 else ("its tree", "raises", "it is")
        )
        if lift is None:
            gain = "its effect on predictions could not be measured"
        elif lift > 0:
            gain = (
                f"{subject} {verb} the probability given to the right answer by {100 * lift:.1f} points over "
                "guessing from the class shares"
            )
        else:
            gain = (
                f"{subject} do{'es' if trees == 1 else ''} no better than guessing from the class shares "
                f"({100 * lift:+.1f} points)"
            )
        alone = f"; alone {they} right on {100 * accuracy:.0f}% of the rows" if accuracy is not None else ""
        lines.append(f"{c.get('party', '?')}: {gain}{alone}; {contribution_verdict(c, alpha, len(contributions))}")
    return lines
