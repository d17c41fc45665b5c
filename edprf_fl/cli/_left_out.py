"""Rows ``edprf evaluate`` leaves out of its metrics, and whether the figures on the rest may be biased.

A row is left out when a feature breaks the schema's rules (refused), when its line cannot be read (malformed) or
when its label is missing or not a declared class.  Rows left out are rarely missing at random (a lab value is
missing more often in some patients than in others), so the metrics on the rest can be biased whatever the
reason: the banner and exit status of :mod:`._evaluate_cmd` count every reason (analyst review F1), with the most
common ones named.

Fed chunk by chunk (bounded memory: counts only).  Imported by the handler only (it loads numpy).

Privacy: exact counts of the caller's own rows, printed on its own terminal; nothing is released.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from edprf_core.count_text import count_text

__all__ = ["SUBSET_SHARE", "LeftOut"]

SUBSET_SHARE = 0.05
"""Above this share of DATA's rows left out (for any reason), or with any undeclared label, ``evaluate`` prints a
banner above the report and exits with its subset status unless ``--allow-subset``."""

SHOWN_REASONS = 3
"""Reasons named in the banner and the summary (the most common first)."""

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

    def top_reasons(self) -> str:
        """``"column 'HbA1c_level': missing, ... (750 rows); label missing (3 rows)"``: the most common reasons."""
        shown = self.reasons.most_common(SHOWN_REASONS)
        more = len(self.reasons) - len(shown)
        text = "; ".join(f"{reason} ({count_text(n, 'row')})" for reason, n in shown)
        return text + (f"; and {more} other reason{'s' if more > 1 else ''}" if more > 0 else "")

    def is_subset(self) -> bool:
        """Whether the metrics are on a subset that may be biased: more than :data:`SUBSET_SHARE` of the rows left
        out, or any label not a declared class (a different coding of a class leaves a class out)."""
        return self.undeclared > 0 or self.count > SUBSET_SHARE * self.total

    def banner(self) -> str:
        """The banner above the report (:meth:`is_subset`), else ``""``."""
        if not self.is_subset():
            return ""
        parts = []
        if self.label:
            parts.append(
                f"{self.label} of them for their label ({self.missing} missing, {self.undeclared} not a declared "
                "class: a different coding of the classes? map it with the schema's [label] aliases)"
            )
        if self.refused:
            parts.append(f"{self.refused} refused for a feature's value")
        if self.malformed:
            parts.append(count_text(self.malformed, "malformed line"))
        return (
            f"WARNING: metrics on {self.evaluated} of {count_text(self.total, 'row')}: {self.count} were left out, "
            + ", ".join(parts)
            + f" (most common: {self.top_reasons()}); rows left out are rarely missing at random (a lab value "
            "missing more often in sicker patients), so the figures may be biased: complete these rows if you can, "
            "else report the figures as those of this subset"
        )

    def as_dict(self) -> dict[str, object]:
        """The counts per reason, for ``--json`` (``left_out_reasons``)."""
        return dict(self.reasons.most_common())
