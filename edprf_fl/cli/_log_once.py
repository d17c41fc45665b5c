"""The parties' seeded-noise warning once per command, not once per party per run.

A simulated party logs, on ``edprf.party``, each estimator warning of its fit (``training: ...``): with
seeded noise, every party of every run says its model is NOT differentially private, the same line each
time (72 lines for a 16-run sweep, burying its progress lines, when the sweep's header already says so).
:func:`seeded_noise_warning_once` lets the first of each distinct such line through, for its duration;
every other record of the logger, and every other logger, is untouched.  In-process only: a Ray engine's
parties log in their own processes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PARTY_LOGGER", "seeded_noise_warning_once"]

PARTY_LOGGER = "edprf.party"
"""Where a party logs its fit's warnings (``client._party``: ``log.warning("training: %s", w.message)``)."""


class _FirstOfEach(logging.Filter):
    """Passes the first record of each distinct message logged with a warning of ``category`` as an argument;
    drops the repeats.  Records of anything else pass."""

    def __init__(self, category: type[Warning]) -> None:
        super().__init__()
        self.category = category
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if not any(isinstance(a, self.category) for a in args):
            return True
        text = record.getMessage()
        if text in self.seen:
            return False
        self.seen.add(text)
        return True


@contextmanager
def seeded_noise_warning_once() -> Iterator[None]:
    """While inside: each distinct seeded-noise warning of the parties is logged once (``SeededNoiseWarning``)."""
    from edprf_core import SeededNoiseWarning

    logger = logging.getLogger(PARTY_LOGGER)
    once = _FirstOfEach(SeededNoiseWarning)
    logger.addFilter(once)
    try:
        yield
    finally:
        logger.removeFilter(once)
