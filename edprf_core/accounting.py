"""Privacy budget accounting: the accountant that every fit charges, layer schedules and tree composition.

:func:`budget` caps what the fits inside a ``with`` block may spend; a fit that would exceed the cap raises
:class:`BudgetExceededError` before it reads any data.
"""

from ._accountant import BudgetAccountant, BudgetExceededError, budget, default_accountant, set_default_accountant
from ._budget import (
    HarmonicSchedule,
    LayerSchedule,
    LinearSchedule,
    ParallelComposition,
    SequentialComposition,
    UniformSchedule,
)
from ._exceptions import BudgetError

__all__ = [
    "BudgetAccountant",
    "BudgetError",
    "BudgetExceededError",
    "HarmonicSchedule",
    "LayerSchedule",
    "LinearSchedule",
    "ParallelComposition",
    "SequentialComposition",
    "UniformSchedule",
    "budget",
    "default_accountant",
    "set_default_accountant",
]
