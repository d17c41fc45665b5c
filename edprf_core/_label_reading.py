"""Whether the labels of the fits now running were read by the caller itself (a party's release, a simulation).

Kept apart from the input checks (which import scikit-learn) so that :mod:`edprf_core.encoding` stays light: the
coordinator imports it and starts without scikit-learn or scipy.stats.  Privacy cost: none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["LABELS_READ_BY_CALLER", "labels_read_by_caller"]

LABELS_READ_BY_CALLER: ContextVar[bool] = ContextVar("edprf_labels_read_by_caller", default=False)
"""Set inside :func:`labels_read_by_caller`: the fits there skip :func:`~edprf_core._input_checks.warn_if_labels_read`."""


@contextmanager
def labels_read_by_caller() -> Iterator[None]:
    """Fits inside this block do not warn that labels were read through the schema (:func:`~edprf_core._input_checks.warn_if_labels_read`).

    For code that reads its labels by the schema itself and scores nothing with scikit-learn's scorers (a party's
    release, the demo, a simulation's baselines): the warning would only repeat in its log, and its check costs a
    pass over ``y``.  Per thread and task (a :class:`contextvars.ContextVar`).  Privacy cost: none.
    """
    token = LABELS_READ_BY_CALLER.set(True)
    try:
        yield
    finally:
        LABELS_READ_BY_CALLER.reset(token)
