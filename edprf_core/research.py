"""Research options: what reproduces the eDPRF paper's baselines, behind an explicit import.

The production estimator :class:`edprf_core.EDPRFClassifier` always uses the
harmonic layer schedule, parallel composition across trees, permute-and-flip
with the monotone noise scale under add-remove, and the exact OpenDP sampler
unless seeded.  This module holds the alternatives the paper compares against::

    from edprf_core.research import PaperEDPRFClassifier
    clf = PaperEDPRFClassifier(schema, schedule="uniform", variant="tradition", random_state=0).fit(X, y)

A federation accepts none of them: the wire format carries only the
production values, and a party or coordinator refuses the rest.
"""

from ._budget import (
    HarmonicSchedule,
    LayerSchedule,
    LinearSchedule,
    ParallelComposition,
    SequentialComposition,
    TreeComposition,
    UniformSchedule,
)
from ._classifier import PaperOptions
from ._forest import COMPOSITIONS, SAMPLERS, SCHEDULES, VARIANTS
from ._mechanisms import ExponentialMechanism, LaplaceMechanism, permute_and_flip_literal
from ._paper_classifier import PaperEDPRFClassifier

__all__ = [
    "COMPOSITIONS",
    "SAMPLERS",
    "SCHEDULES",
    "VARIANTS",
    "ExponentialMechanism",
    "HarmonicSchedule",
    "LaplaceMechanism",
    "LayerSchedule",
    "LinearSchedule",
    "PaperEDPRFClassifier",
    "PaperOptions",
    "ParallelComposition",
    "SequentialComposition",
    "TreeComposition",
    "UniformSchedule",
    "permute_and_flip_literal",
]
