"""Rows ``edprf evaluate`` leaves out of its metrics, and whether the figures on the rest may be biased.

A row is left out when a feature breaks the schema's rules (refused), when its line cannot be read (malformed) or
when its label is missing or not a declared class.  Rows left out are rarely missing at random (a lab value is
missing more often in some patients than in others), so the metrics on the rest can be biased whatever the
reason: the banner and exit status of :mod:`._evaluate_cmd` count every reason (analyst review F1), with the most
common ones named.  Rows left out can matter far beyond their share of all rows when the outcome is rare (100 of
3000 rows are 41 % of 245 events), so each class is also counted apart, and the rows left out for their label,
which were scored, are compared with the evaluated rows by their predicted probabilities (analyst review F2).

Fed chunk by chunk (bounded memory: counts only).  Imported by the handler only (it loads numpy).

Privacy: exact counts of the caller's own rows, printed on its own terminal; nothing is released.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from edprf_core.count_text import count_text

from ._subset_share import SUBSET_SHARE

__all__ = ["SUBSET_SHARE", "LeftOut"]

SHOWN_REASONS = 3
"""Reasons named in the banner and the summary (the most common first)."""

CLEAR_Z = 3.0
"""Rows left out for their label differ *clearly* from the evaluated rows when their mean predicted probability of
some class is this many standard errors from the evaluated rows' mean: a difference that the sampling of that many
rows explains about 3 times in 1000 if they were drawn like the evaluated rows."""

MIN_CLASS_ROWS = 5
"""A class's share left out counts only from this many of its rows on: one event of a ten-event file is 10 %, but
its loss is within what any interval on ten events already spans."""

MIN_COMPARED = 10
"""Fewer rows left out for their label than this are not compared (their mean is too noisy to say; the per-class
share still counts them)."""

LABEL_MISSING = "label missing"
LABEL_UNDECLARED = "label not a declared class"


@dataclass
class LeftOut:
    """Counts of the rows left out of ``evaluate``'s metrics, by reason, over every chunk of one file.

    Parameters
    ----------
    classes : tuple
        The model's declared classes.
    """

    classes: tuple
    total: int = 0
    evaluated: int = 0
    refused: int = 0
    malformed: int = 0
    missing: int = 0
    undeclared: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Per reason (``column 'age': not a number``, ``label missing``), the rows it left out; a refused row with two
    bad cells counts under both."""
    refused_by_class: NDArray[np.float64] | None = None
    """Per class, the refused rows whose label is that class (their label was read though a feature was not)."""
    unlabelled_proba: list[NDArray[np.float64]] = field(default_factory=list)
    """The predicted probabilities of the rows left out for their label (they were scored)."""
    evaluated_mean: NDArray[np.float64] | None = None
    evaluated_sd: NDArray[np.float64] | None = None
    evaluated_by_class: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        self.refused_by_class = np.zeros(len(self.classes))

    @property
    def label(self) -> int:
        """Rows left out for their label (missing or undeclared)."""
        return self.missing + self.undeclared

    @property
    def count(self) -> int:
        """Rows left out, for any reason."""
        return self.refused + self.malformed + self.label

    def add_reasons(self, reasons: Counter[str]) -> None:
        """Count the feature and line reasons (:attr:`RowDiagnostics.reasons`, once, after the last chunk)."""
        self.reasons.update(reasons)

    def add_labels(self, missing: NDArray[np.bool_], undeclared: NDArray[np.bool_]) -> None:
        """Count a chunk's scored rows left out for a missing or an undeclared label."""
        n_missing, n_undeclared = int(missing.sum()), int(undeclared.sum())
        self.missing += n_missing
        self.undeclared += n_undeclared
        self.reasons.update({k: v for k, v in ((LABEL_MISSING, n_missing), (LABEL_UNDECLARED, n_undeclared)) if v})

    def add_refused_labels(self, y: NDArray[np.int64], refused: NDArray[np.bool_]) -> None:
        """Count a chunk's refused rows by their (declared) label."""
        known = y[refused & (y >= 0)]
        self.refused_by_class += np.bincount(known, minlength=len(self.classes))

    def add_unlabelled(self, proba: NDArray[np.float64]) -> None:
        """Keep the predicted probabilities of a chunk's rows left out for their label."""
        self.unlabelled_proba.append(proba)

    def set_evaluated(self, y: NDArray[np.int64], proba: NDArray[np.float64]) -> None:
        """The evaluated rows' labels and probabilities (after the last chunk): the reference of the comparisons."""
        self.evaluated_by_class = np.bincount(y, minlength=len(self.classes)).astype(np.float64)
        if len(y):
            self.evaluated_mean, self.evaluated_sd = proba.mean(axis=0), proba.std(axis=0)

    def _unlabelled(self) -> NDArray[np.float64]:
        if not self.unlabelled_proba:
            return np.zeros((0, len(self.classes)))
        return np.concatenate(self.unlabelled_proba)

    def class_shares(self) -> NDArray[np.float64]:
        """Per class, the share of its labelled rows that were refused (for a feature's value): 0 for the majority
        class (all rows' share covers it) and for a class with fewer than :data:`MIN_CLASS_ROWS` refused.  Rows
        without a label are compared by :meth:`z_scores`."""
        left = self.refused_by_class
        evaluated = self.evaluated_by_class if self.evaluated_by_class is not None else 0.0
        whole = left + evaluated
        shares = np.divide(left, whole, out=np.zeros_like(left), where=whole > 0)
        minority = whole < 0.5 * whole.sum()
        return np.where(minority & (left >= MIN_CLASS_ROWS), shares, 0.0)

    def z_scores(self) -> NDArray[np.float64]:
        """Per class, how many standard errors the mean probability of the rows left out for their label lies from
        the evaluated rows' (NaN when there are fewer than :data:`MIN_COMPARED` of them, or nothing to compare)."""
        p = self._unlabelled()
        nan = np.full(len(self.classes), np.nan)
        if len(p) < MIN_COMPARED or self.evaluated_mean is None:
            return nan
        n_eval = float(self.evaluated_by_class.sum())
        # under "drawn like the evaluated rows", both means scatter with the evaluated rows' spread
        se = self.evaluated_sd * np.sqrt(1.0 / len(p) + 1.0 / n_eval)
        return np.divide(p.mean(axis=0) - self.evaluated_mean, se, out=nan, where=se > 0)

    def risk_text(self, positive: int | None) -> str:
        """``"mean predicted probability of '1': 0.507 (evaluated rows: 0.069)"`` of the rows left out for their
        label (every class when ``positive`` is None), or ``""`` when there are none."""
        p = self._unlabelled()
        if not len(p) or self.evaluated_mean is None:
            return ""
        shown = [positive] if positive is not None else range(len(self.classes))
        means = ", ".join(
            f"{str(self.classes[k])!r} {p[:, k].mean():.3f} (evaluated rows: {self.evaluated_mean[k]:.3f})"
            for k in shown
        )
        return f"rows left out for their label ({len(p)}): mean predicted probability of {means}"

    def _class_clause(self) -> str:
        """The banner's words on the class that lost the largest share of its rows, when above the share."""
        shares = self.class_shares()
        k = int(np.argmax(shares))
        if shares[k] <= SUBSET_SHARE:
            return ""
        return (
            f"; the refused rows hold {int(self.refused_by_class[k])} of the "
            f"{int(self.refused_by_class[k] + self.evaluated_by_class[k])} rows labelled {str(self.classes[k])!r} "
            f"({shares[k]:.0%})"
        )

    def _risk_clause(self, positive: int | None) -> str:
        z = self.z_scores()
        if not np.any(np.abs(z) >= CLEAR_Z):
            return ""
        k = positive if positive is not None else int(np.nanargmax(np.abs(z)))  # two classes: the same z
        p = self._unlabelled()
        return (
            f"; the rows left out for their label have a mean predicted probability of {str(self.classes[k])!r} of "
            f"{p[:, k].mean():.3f} against {self.evaluated_mean[k]:.3f} for the evaluated rows, more than the "
            f"sampling of {len(p)} rows explains: they are not like the evaluated rows"
        )

    def top_reasons(self) -> str:
        """``"column 'HbA1c_level': missing, ... (750 rows); label missing (3 rows)"``: the most common reasons."""
        shown = self.reasons.most_common(SHOWN_REASONS)
        more = len(self.reasons) - len(shown)
        text = "; ".join(f"{reason} ({count_text(n, 'row')})" for reason, n in shown)
        return text + (f"; and {more} other reason{'s' if more > 1 else ''}" if more > 0 else "")

    def is_subset(self) -> bool:
        """Whether the metrics are on a subset that may be biased: more than :data:`SUBSET_SHARE` of the rows left
        out; any label not a declared class (a different coding of a class leaves a class out); more than
        :data:`SUBSET_SHARE` of a minority class's labelled rows refused (:meth:`class_shares`: a rare outcome loses its
        events long before 5 % of all rows are left out); or rows without a label whose predicted probabilities differ clearly from
        the evaluated rows' (:meth:`z_scores`, :data:`CLEAR_Z`)."""
        return (
            self.undeclared > 0
            or self.count > SUBSET_SHARE * self.total
            or bool(np.any(self.class_shares() > SUBSET_SHARE))
            or bool(np.any(np.abs(self.z_scores()) >= CLEAR_Z))
        )

    def banner(self, positive: int | None = None) -> str:
        """The banner above the report (:meth:`is_subset`), else ``""``; ``positive``, the class index whose
        probability is compared (else the class that differs most)."""
        if not self.is_subset():
            return ""
        parts = []
        if self.label:
            coding = ": a different coding of the classes? map it with --label-map TEXT=CLASS,... or recode the column"
            parts.append(
                f"{self.label} of them for their label ({self.missing} missing, {self.undeclared} not a declared "
                f"class{coding if self.undeclared else ''})"
            )
        if self.refused:
            parts.append(f"{self.refused} refused for a feature's value")
        if self.malformed:
            parts.append(count_text(self.malformed, "malformed line"))
        return (
            f"WARNING: metrics on {self.evaluated} of {count_text(self.total, 'row')}: {self.count} were left out, "
            + ", ".join(parts)
            + f" (most common: {self.top_reasons()})"
            + self._class_clause()
            + self._risk_clause(positive)
            + "; rows left out are rarely missing at random (a lab value "
            "missing more often in sicker patients), so the figures may be biased: complete these rows if you can, "
            "else report the figures as those of this subset"
        )

    def as_dict(self) -> dict[str, object]:
        """The counts per reason (``left_out_reasons``) and the comparisons of the rows left out (``left_out_rows``),
        for ``--json``."""
        p = self._unlabelled()
        z = self.z_scores()
        mean = p.mean(axis=0) if len(p) else np.full(len(self.classes), np.nan)
        evaluated = self.evaluated_mean if self.evaluated_mean is not None else np.full(len(self.classes), np.nan)
        per_class = {
            str(c): {
                "share_refused": float(self.class_shares()[k]),
                "refused_with_this_label": int(self.refused_by_class[k]),
                "mean_probability_without_label": _finite(mean[k]),
                "mean_probability_evaluated": _finite(evaluated[k]),
                "z": _finite(z[k]),
            }
            for k, c in enumerate(self.classes)
        }
        return {"left_out_reasons": dict(self.reasons.most_common()), "left_out_by_class": per_class}


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
