"""Hypothesis settings of the protocol tests: bounded for CI, scalable for deep runs.

``PROTOCOL_FUZZ_SCALE=50 pytest tests/protocol`` multiplies every example
count by 50 (deadlines stay: a slow decode is a bug at any scale).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["bounded"]

_SCALE = max(1, int(os.environ.get("PROTOCOL_FUZZ_SCALE", "1")))


def bounded(max_examples: int, deadline_ms: int = 1000) -> settings:
    """Settings with ``max_examples * PROTOCOL_FUZZ_SCALE`` examples and a per-example deadline."""
    return settings(
        max_examples=max_examples * _SCALE,
        deadline=deadline_ms,
        database=None,  # no .hypothesis/ directory in the working tree
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )
