"""Can this host draw a release exactly?  Asked before any ε is reserved.

The exact samplers (OpenDP's noisy max and discrete Laplace) load OpenDP's native library at their first use, which
used to be the first draw of a fit, after the party's ledger had reserved the request's ε: a host whose memory limit
or installation kept the library from loading spent its ε on every request and released nothing (scale review F3).
"""

from __future__ import annotations

from functools import cache

from ._count_noise import _opendp_measurement
from ._exact_selection import ExactPermuteAndFlip

__all__ = ["load_exact_samplers"]


@cache  # once loaded, loaded for the process (a failure raises, and is not kept: the next request asks again)
def load_exact_samplers() -> None:
    """Load OpenDP's library and build one measurement of each exact sampler a release uses, without drawing.

    Raises whatever OpenDP raises when it cannot (its library missing, or not mapped under a memory limit).

    Privacy cost: none (no data is read, nothing is drawn).
    """
    ExactPermuteAndFlip(sensitivity=2)._measurement(1.0)
    _opendp_measurement(1.0, 1)
