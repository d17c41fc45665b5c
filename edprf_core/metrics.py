"""Clinical metrics of a model on labelled data, with confidence intervals (computed on the evaluator's own
data: not differentially private unless the data are public).
"""

from ._clinical_metrics import (
    BRIER_MULTICLASS_SCALE,
    MAX_CALIBRATION_BINS,
    NOT_DP_NOTE,
    ClinicalReport,
    clinical_report,
)
from ._metric_intervals import Estimate, interval_text, macro_f1_estimate

__all__ = [
    "BRIER_MULTICLASS_SCALE",
    "MAX_CALIBRATION_BINS",
    "NOT_DP_NOTE",
    "ClinicalReport",
    "Estimate",
    "clinical_report",
    "interval_text",
    "macro_f1_estimate",
]
