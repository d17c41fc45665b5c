"""The OpenDP constructors the exact samplers build their measurements from, imported without ``opendp.prelude``.

Why not the prelude.  ``import opendp.prelude`` also imports OpenDP's optional extras, which import scikit-learn,
SciPy and pandas whenever they are installed: about 3 s of CPU on a 2-core host (against 0.3 s for the modules
below), paid by every ClientApp process a party's SuperNode starts (Flower 1.41 starts one per message, and the
readiness check and training both load the samplers), though no sampler uses any of them.

Privacy.  The names below are the very objects the prelude re-exports (``dp.m`` is ``opendp.measurements``,
``dp.vector_domain`` is ``opendp.domains.vector_domain``, ...), so every measurement is built, checked and drawn
from exactly as before: this changes which modules are imported, nothing that is computed.
"""

from __future__ import annotations

from types import SimpleNamespace

__all__ = ["opendp_constructors"]


def opendp_constructors() -> SimpleNamespace:
    """OpenDP's domain, metric, measure and measurement constructors, with OpenDP's ``contrib`` features enabled.

    Returns
    -------
    types.SimpleNamespace
        ``vector_domain``, ``atom_domain`` (``opendp.domains``), ``l1_distance``, ``linf_distance``
        (``opendp.metrics``), ``max_divergence`` (``opendp.measures``) and ``m`` (``opendp.measurements``).

    Privacy cost: none (nothing is read or drawn).
    """
    from opendp import domains, measurements, measures, metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    return SimpleNamespace(
        vector_domain=domains.vector_domain,
        atom_domain=domains.atom_domain,
        l1_distance=metrics.l1_distance,
        linf_distance=metrics.linf_distance,
        max_divergence=measures.max_divergence,
        m=measurements,
    )
