"""The estimator with the eDPRF paper's reproduction options (:mod:`edprf_core.research`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from sklearn.utils._param_validation import StrOptions

from ._accountant import BudgetAccountant
from ._classifier import EDPRFClassifier, PaperOptions
from ._depth_rule import AUTO_DEPTH_CAP
from ._forest import COMPOSITIONS, SAMPLERS, SCHEDULES, VARIANTS
from ._randomness import RandomState
from ._schema import Schema

__all__ = ["PaperEDPRFClassifier"]


class PaperEDPRFClassifier(EDPRFClassifier):
    """:class:`~edprf_core.EDPRFClassifier` with the options that reproduce the eDPRF paper's baselines.

    For research and benchmarks only.  The production path (a party, the
    coordinator, the wire format) accepts none of these options: a release
    trained with a non-default one cannot be encoded for a federation.  The
    guarantee text of a fit says NOT differentially private, with the reason,
    whenever an option breaks the guarantee (``stop_when_pure``, the
    floating-point Laplace labels of ``variant="tradition", leaf="label"``).

    Parameters
    ----------
    schema, epsilon, n_trees, max_depth, max_depth_cap, n_rows_public, count_epsilon_share, leaf, \
split_mode, n_bins, relation, random_state, accountant
        As in :class:`~edprf_core.EDPRFClassifier`.
    schedule : {"harmonic", "uniform", "linear"}, default "harmonic"
        Layer schedule (harmonic = eDPRF formulas 9 and 10;
        :mod:`edprf_core.research` has the schedule classes).  Every schedule
        spends exactly the tree's ε on each root-to-leaf path.
    composition : {"parallel", "sequential"}, default "parallel"
        ``parallel``: each row goes to one tree at random, each tree spends ε.
        ``sequential``: each tree sees all rows and spends ε / T (baselines).
    variant : {"pf", "tradition"}, default "pf"
        ``tradition``: exponential mechanism for splits, Laplace-noised leaf
        counts (the paper's baseline).
    exploit_monotonicity : bool or None, default None
        Under add-remove both utilities are monotone (adding a record never
        raises a weighted Gini impurity term's negative, and raises exactly one
        class count), which halves the permute-and-flip noise.  ``None`` means
        True under add-remove and False under replace-one.  The paper's
        configuration is ``False``.
    marginals_share : float in [0, 1) or "auto", default 0.0
        As in :class:`~edprf_core.EDPRFClassifier`, but 0 by default: the
        paper's forest has no marginals part.
    marginals_bins : int >= 2 or "auto", default "auto"
        As in :class:`~edprf_core.EDPRFClassifier`.
    residual_pass : bool or "auto", default False
        As in :class:`~edprf_core.EDPRFClassifier`, but off by default: the
        paper's forest has no marginals part.
    stop_when_pure : bool, default False
        The paper's literal "stop when pure" rule.  Leaks the data through
        tree shapes: NOT differentially private; warns with
        PrivacyLeakWarning and marks the model ``dp=False``.
    sampler : {"auto", "exact", "numpy"}, default "auto"
        Backend of the mechanisms.  ``"exact"``: OpenDP's exact noisy max with
        exponential noise on integer utilities, randomness from the operating
        system.  ``"numpy"``: the vectorized floating-point backend (fast,
        seedable; NOT differentially private, seeded or not: no DP proof covers
        floating-point noise, so ``dp_`` is False and the guarantee says why;
        use it for research, never for a release).  ``"auto"``:
        exact when ``random_state`` is None and ``variant="pf"``, numpy
        otherwise.  ``"exact"`` cannot be seeded and supports the ``"pf"``
        variant only.

    Notes
    -----
    Privacy cost of ``fit``: ε per record under ``relation`` when the
    guarantee holds (see :class:`~edprf_core.EDPRFClassifier`).  With
    sequential composition each tree sees every row at ε / T (sequential
    composition over the trees).
    """

    _parameter_constraints: ClassVar[dict] = {
        **EDPRFClassifier._parameter_constraints,
        "schedule": [StrOptions(set(SCHEDULES))],
        "composition": [StrOptions(set(COMPOSITIONS))],
        "variant": [StrOptions(set(VARIANTS))],
        "exploit_monotonicity": ["boolean", None],
        "stop_when_pure": ["boolean"],
        "sampler": [StrOptions({"auto", *SAMPLERS})],
    }

    def __init__(
        self,
        schema: Schema | str | Path | None = None,
        *,
        epsilon: float = 1.0,
        n_trees: int | str = "auto",
        max_depth: int | str = "auto",
        max_depth_cap: int = AUTO_DEPTH_CAP,
        n_rows_public: int | None = None,
        count_epsilon_share: float = 0.05,
        leaf: str = "counts",
        split_mode: str = "binary",
        n_bins: int | str = "auto",
        relation: str = "add-remove",
        random_state: RandomState = None,
        sampler: str = "auto",
        accountant: BudgetAccountant | None = None,
        schedule: str = "harmonic",
        composition: str = "parallel",
        variant: str = "pf",
        exploit_monotonicity: bool | None = None,
        stop_when_pure: bool = False,
        marginals_share: float | str = 0.0,
        marginals_bins: int | str = "auto",
        residual_pass: bool | str = False,
    ) -> None:
        super().__init__(
            schema,
            epsilon=epsilon,
            n_trees=n_trees,
            max_depth=max_depth,
            max_depth_cap=max_depth_cap,
            n_rows_public=n_rows_public,
            count_epsilon_share=count_epsilon_share,
            leaf=leaf,
            split_mode=split_mode,
            n_bins=n_bins,
            relation=relation,
            random_state=random_state,
            sampler=sampler,
            accountant=accountant,
            marginals_share=marginals_share,
            marginals_bins=marginals_bins,
            residual_pass=residual_pass,
        )
        self.schedule = schedule
        self.composition = composition
        self.variant = variant
        self.exploit_monotonicity = exploit_monotonicity
        self.stop_when_pure = stop_when_pure

    def _paper_options(self) -> PaperOptions:
        return PaperOptions(
            schedule=self.schedule,
            composition=self.composition,
            variant=self.variant,
            exploit_monotonicity=self.exploit_monotonicity,
            stop_when_pure=self.stop_when_pure,
            sampler=self.sampler,
        )
