"""Privacy budget accounting: the accountant that fits charge, and the cap of a ``with`` block.

:func:`budget` caps what the fits inside a ``with`` block may spend; a fit that would exceed the cap raises
:class:`BudgetExceededError` and releases nothing.  :func:`process_accountant` records every fit of the process,
whatever accountant (or none) it charged.
"""

from ._accountant import (
    BudgetAccountant,
    BudgetExceededError,
    budget,
    default_accountant,
    process_accountant,
    set_default_accountant,
)
from ._exceptions import BudgetError

__all__ = [
    "BudgetAccountant",
    "BudgetError",
    "BudgetExceededError",
    "budget",
    "default_accountant",
    "process_accountant",
    "set_default_accountant",
]
