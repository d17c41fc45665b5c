"""A fitted DP forest as a self-contained, mergeable object.

:class:`DPForest` is what a party may release: the public schema, the
parameters the guarantee depends on, and the trees (outputs of DP mechanisms
on the public grid).  It carries no exact counts, sizes or other data-derived
value: the only counts in it are the leaves' class counts released with
discrete Laplace noise (``leaf="counts"``) and, in the parameters, a DP row
count used to choose the depth (``depth_rule="dp-count"``).
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._accountant import epsilon_float
from ._budget import layer_schedule, tree_composition
from ._encoding import FeatureGrid, encode_features
from ._exceptions import SchemaError
from ._leaf_distribution import (
    POOLINGS,
    SHRINKAGE,
    TOLERATED_PARTIES,
    PartPooling,
    bounded_part_mean,
    class_share_rows,
    class_share_weights,
    corrected_class_totals,
    label_shift_factors,
    leaf_distributions,
    log_linear_pool,
    part_consortium_prior,
    released_class_totals,
)
from ._leafmask import LeafMaskPredictor
from ._predict import RoutingTable
from ._schema import Schema
from ._tree import SPLIT_MODES, ForestArrays
from .count_text import count_text

if TYPE_CHECKING:
    from ._marginals import NoisyMarginals

__all__ = [
    "COMPOSITIONS",
    "DEPTH_RULES",
    "DRAFTED_REASON",
    "FEDERATION_NOTE",
    "FLOAT_NOISE_REASON",
    "LARGE_EPSILON",
    "LEAF_OUTPUTS",
    "MAX_DEPTH_LIMIT",
    "ONE_PARTY_CONDITION",
    "POOLING_NOTE",
    "RELATIONS",
    "SAMPLERS",
    "SCHEDULES",
    "SEEDED_REASON",
    "SIZE_CHOICES",
    "VARIANTS",
    "DPForest",
    "TrainingParameters",
    "check_is_forest",
    "large_epsilon_note",
    "merge_forests",
    "release_guarantee",
    "size_source",
]

logger = logging.getLogger(__name__)

RELATIONS = ("add-remove", "replace-one")
VARIANTS = ("pf", "tradition")
SCHEDULES = ("harmonic", "uniform", "linear")
COMPOSITIONS = ("parallel", "sequential")
SAMPLERS = ("numpy", "exact")
LEAF_OUTPUTS = ("label", "counts")
DEPTH_RULES = ("fixed", "declared-size", "dp-count")
MAX_DEPTH_LIMIT = 30


@dataclass(frozen=True)
class TrainingParameters:
    """The parameters a party's guarantee depends on.

    Attributes
    ----------
    epsilon : float in (0, inf)
        ε of every record of the training data for this release.
    relation : {"add-remove", "replace-one"}
        Neighbouring relation the ε refers to.
    schedule, composition, split_mode, variant : str
        Layer schedule, how trees share ε, split mode, mechanism family.
    max_depth : int >= 1
        Split levels (node layers = max_depth + 1).
    n_trees : int >= 1
    n_bins : int >= 2
        Equal-width bins of continuous features without declared edges.
    exploit_monotonicity : bool
        Whether the monotone-utility noise scale was used (add-remove only).
    dp : bool
        False when a research-only option broke the guarantee.
    seeded : bool
        True when randomness came from a fixed seed (reproducible research):
        such a release is not protected against someone who knows the seed.
    sampler : {"numpy", "exact"}
        Which mechanism backend drew the noise: the vectorized floating-point
        numpy backend (research, seeded simulations, benchmarks; NOT
        differentially private, seeded or not: :data:`FLOAT_NOISE_REASON`) or
        the exact samplers (production releases).
    leaf : {"label", "counts"}
        What a leaf releases: ``"label"``, the class chosen by the leaf
        mechanism (the paper); ``"counts"``, the class counts with discrete
        Laplace noise at the same leaf budget (L1 sensitivity 1 under
        add-remove, 2 under replace-one), clamped at 0.
    count_epsilon : float in [0, epsilon)
        Part of ``epsilon`` spent on a DP count of the training rows (to
        choose the size-dependent shape: trees, depth, bins, the marginals
        share and grid, and whether a residual pass runs); the model spends
        the rest, ``epsilon - count_epsilon`` (sequential composition of the
        count and the model).
    depth_rule : {"fixed", "declared-size", "dp-count"}
        Where the size-dependent choices (trees, ``max_depth``, bins) came
        from: all given, chosen from a row count declared public, or chosen
        from the DP count (``count_epsilon > 0``).
    marginals_share : float in [0, 1), default 0
        Expected share of the rows assigned (independently per row, at
        random) to the marginals part; the trees get the others.  0: no
        marginals part.  Both parts spend ``epsilon - count_epsilon`` on
        disjoint rows (parallel composition), and predictions pool them with
        weights ``marginals_share`` and ``1 - marginals_share``.
    marginals_bins : int
        ``n_bins`` of the marginals part's public grid: >= 2 when
        ``marginals_share > 0``, else 0.
    chosen : tuple of str or None, default None
        Which size-dependent choices the automatic rules made (among
        :data:`SIZE_CHOICES`: the others were given), as the fitting estimator
        knew them; read only when ``depth_rule`` is not ``"fixed"``.  Not on the
        wire and not compared: a decoded release has None, and its guarantee
        then says the choices *not given* came from the rule without naming
        them.
    inputs_not_dp : tuple of str, default ()
        Why the fit's *inputs* were not DP though its mechanisms were, each a reason in words, as the fitting
        estimator found them (:mod:`edprf_core._fit_context`): a step fitted on the same rows before the
        estimator in a ``Pipeline``, or settings chosen by a search on these rows' scores.  Each is a reason of
        :meth:`not_dp_reasons`, like a seed.  Not on the wire: :func:`protocol.encode_release` refuses a release
        that has any.
    """

    epsilon: float
    relation: str = "add-remove"
    schedule: str = "harmonic"
    composition: str = "parallel"
    split_mode: str = "binary"
    variant: str = "pf"
    max_depth: int = 5
    n_trees: int = 1
    n_bins: int = 5
    exploit_monotonicity: bool = True
    dp: bool = True
    seeded: bool = False
    sampler: str = "numpy"
    leaf: str = "label"
    count_epsilon: float = 0.0
    depth_rule: str = "fixed"
    marginals_share: float = 0.0
    marginals_bins: int = 0
    chosen: tuple[str, ...] | None = field(default=None, compare=False)
    inputs_not_dp: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # any real number a user passes (numpy's float32 and int64 from a parameter grid too), kept as a float
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, Real):
            raise ValueError(  # noqa: TRY004 - a ValueError as every other invalid field (decoders catch it)
                f"epsilon: expected a positive finite number, got {type(self.epsilon).__name__}"
            )
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a positive finite number, got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", epsilon_float(self.epsilon))
        for name, allowed in (
            ("relation", RELATIONS),
            ("schedule", SCHEDULES),
            ("composition", COMPOSITIONS),
            ("split_mode", SPLIT_MODES),
            ("variant", VARIANTS),
            ("sampler", SAMPLERS),
            ("leaf", LEAF_OUTPUTS),
            ("depth_rule", DEPTH_RULES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name, low in (("max_depth", 1), ("n_trees", 1), ("n_bins", 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        if self.max_depth > MAX_DEPTH_LIMIT:
            raise ValueError(f"max_depth must be <= {MAX_DEPTH_LIMIT}, got {self.max_depth}")
        if self.exploit_monotonicity and self.relation != "add-remove":
            raise ValueError("exploit_monotonicity holds only under the add-remove relation")
        c = self.count_epsilon
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c < 0 or c >= self.epsilon:
            raise ValueError(f"count_epsilon must be in [0, epsilon = {self.epsilon!r}), got {c!r}")
        if (c > 0) != (self.depth_rule == "dp-count"):
            raise ValueError(
                f"depth_rule {self.depth_rule!r} does not match count_epsilon = {c!r} "
                "(a DP row count is spent exactly when the depth comes from it)"
            )
        reasons = self.inputs_not_dp
        if not isinstance(reasons, tuple) or not all(isinstance(r, str) and r.strip() for r in reasons):
            raise ValueError(f"inputs_not_dp: expected a tuple of non-empty reasons, got {reasons!r}")
        chosen = self.chosen
        if chosen is not None and (not isinstance(chosen, tuple) or not set(chosen) <= set(SIZE_CHOICES)):
            raise ValueError(f"chosen must be a tuple of names among {SIZE_CHOICES}, got {chosen!r}")
        m = self.marginals_share
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) or not 0 <= m < 1:
            raise ValueError(f"marginals_share must be in [0, 1), got {m!r}")
        b = self.marginals_bins
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b != 0 and b < 2:
            raise ValueError(f"marginals_bins must be 0 or an integer >= 2, got {b!r}")
        if (m > 0) != (b > 0):
            raise ValueError(
                f"marginals_bins = {b!r} does not match marginals_share = {m!r} "
                "(a marginals part has a grid of >= 2 bins exactly when its share is > 0)"
            )

    @property
    def forest_epsilon(self) -> float:
        """ε the trees share: ``epsilon - count_epsilon``."""
        return self.epsilon - self.count_epsilon

    def tree_epsilon(self) -> float:
        """ε of each tree: the forest's ε (parallel) or that ε / T (sequential)."""
        return tree_composition(self.composition).per_tree_epsilon(self.forest_epsilon, self.n_trees)

    def layer_epsilons(self) -> NDArray[np.float64]:
        """Budget of a split at layers 1..max_depth+1 (the last entry is the full-depth leaf's)."""
        return layer_schedule(self.schedule).layer_budgets(self.tree_epsilon(), self.max_depth + 1)

    def mechanisms(self) -> str:
        """The mechanisms and the sampler backend, in words."""
        split = "the exponential mechanism" if self.variant == "tradition" else "permute-and-flip"
        if self.leaf == "counts":
            mech = f"splits by {split}, leaf class counts with discrete Laplace noise"
        elif self.variant == "tradition":
            mech = "splits by the exponential mechanism, leaf labels from Laplace-noised class counts"
        else:
            mech = "splits and leaf labels by permute-and-flip"
        backend = "exact OpenDP sampler" if self.sampler == "exact" else "numpy floating-point sampler"
        return f"{mech}, drawn by the {backend}"

    def not_dp_reasons(self) -> list[str]:
        """Why a release with these parameters is not differentially private (empty when it is)."""
        reasons = []
        if not self.dp:
            reasons.append("trained with a research-only option (stop_when_pure) whose tree shapes depend on the data")
        if self.seeded:
            reasons.append(SEEDED_REASON)
        if self.sampler != "exact":
            reasons.append(FLOAT_NOISE_REASON)
        if self.variant == "tradition" and self.leaf == "label":
            reasons.append(
                "its leaf labels came from floating-point Laplace noise on class counts (the paper's "
                "baseline), which reveals the exact count in some draws (Mironov, CCS 2012)"
            )
        reasons.extend(self.inputs_not_dp)  # a data-fitted pipeline step, a search's refit (_fit_context)
        return reasons

    def configured(self, residual_epsilon: float = 0.0) -> str:
        """What this configuration gives when every input is DP (one sentence).

        ``residual_epsilon`` > 0: the marginals part's histograms spent ``forest_epsilon - residual_epsilon`` and a
        residual pass on the same rows the rest (:mod:`edprf_core._residual_pass`).
        """
        source = size_source(self.depth_rule, self.count_epsilon)
        shown = ""
        if source and self.chosen:  # the fitting estimator knew which the caller left to the rule
            words = [f"the {_CHOICE_WORDS[c]}" for c in self.chosen]
            said = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
            plural = len(words) > 1
            shown = f" ({said} {'were' if plural else 'was'} not given: {'they were' if plural else 'it was'} {source})"
        elif source:  # a decoded release does not record which of these were given: the words cover those that were not
            shown = f" (where the trees, depth, bins and marginals share were not given, they were {source})"
        depth = f"depth {self.max_depth}{shown}"
        if self.chosen is not None:  # the fitting estimator knew which were given (library-user review S2-3)
            tuned = ("trees", "depth", "bins") + (("marginals share",) if self.marginals_share > 0 else ())
            given = [f"the {_CHOICE_WORDS[c]}" for c in tuned if c not in self.chosen]
            if given:
                said = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
                depth += (
                    f"; {said} {'were' if len(given) > 1 else 'was'} given, assumed chosen without these rows, as "
                    "every setting is (a choice made on them, by a search or by hand, spends privacy this "
                    "guarantee does not count)"
                )
        marginals = ""
        if self.marginals_share > 0:
            spent = self.forest_epsilon - max(residual_epsilon, 0.0)  # less the DP row count's and the pass's share
            histograms = "epsilon" if spent == self.epsilon else f"epsilon = {spent:g}"
            marginals = (
                f"; a random {self.marginals_share:.0%} of the rows, disjoint from the trees' rows (parallel "
                f"composition), release one-way marginals instead: one class-count histogram per feature on a "
                f"{self.marginals_bins}-bin public grid, each with discrete Laplace noise at {histograms} / d"
            )
        if self.marginals_share > 0 and residual_epsilon > 0:
            marginals += (
                f", then one backfitting pass on the same rows' residuals, one noisy integer sum per bin of each "
                f"feature at epsilon = {residual_epsilon:g} / d (sequential composition on those rows)"
            )
        return (
            f"epsilon = {self.epsilon:g} differential privacy per record under the {self.relation} "
            f"neighbouring relation ({count_text(self.n_trees, 'tree')}, {self.composition} composition across trees, "
            f"{self.schedule} layer schedule, {depth}; {self.mechanisms()}{marginals})"
        )

    def statement(self) -> str:
        """Human-readable guarantee of one party's release (one sentence, or NOT DP with the reasons)."""
        reasons = self.not_dp_reasons()
        if reasons:
            return f"NOT differentially private as released: {'; '.join(reasons)}. Configured for {self.configured()}."
        return f"{self.configured()}."


SIZE_CHOICES = ("trees", "depth", "bins", "marginals share")
"""The choices an automatic rule may make from the public size (:attr:`TrainingParameters.chosen`)."""
_CHOICE_WORDS = {
    "trees": "number of trees",
    "depth": "depth",
    "bins": "number of bins",
    "marginals share": "marginals share",
}


DECLARED_SIZE_SOURCE = (
    "chosen from a row count declared public (assumed to be public knowledge, not counted from these rows)"
)
"""Where a declared size's choices came from.  The words state the assumption for every declared count: a count that
equals the exact number of rows is warned about where it is declared (``PrivacyLeakWarning`` in ``fit``, the party's
log), never said here, since whether the two are equal is itself a fact about the rows."""


def size_source(rule: str, count_epsilon: float) -> str:
    """Where the size-dependent choices came from, in words (empty for ``"fixed"``: they were given).

    ``rule`` is one of :data:`DEPTH_RULES`; ``count_epsilon`` in [0, epsilon) is the DP row count's ε.
    """
    return {
        "fixed": "",
        "declared-size": DECLARED_SIZE_SOURCE,
        "dp-count": f"chosen from a DP count of the rows that spent epsilon = {count_epsilon:g} of the total",
    }[rule]


def _some(names: list[str], shown: int, whole: int) -> str:
    """``names`` joined by commas, all of them up to ``whole``, else the first ``shown`` and how many more."""
    if len(names) <= whole:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"


LEAF_COUNT_SENSITIVITY = {"add-remove": 1, "replace-one": 2}
"""L1 sensitivity of a leaf's class-count vector under each neighbouring relation."""

NAMED_PARTS = 3
"""How many parts a merged forest's reason names before it counts the rest (:meth:`DPForest.not_dp_reasons`)."""

_NOTE_CLAUSE = re.compile(r" \(|;")
"""Where a guarantee note's first clause ends (:meth:`DPForest.verdict` quotes that clause)."""

_SHORTEST_CLAUSE = 30
"""A note whose first clause is shorter than this is quoted whole (a clause such as 'Assumes' says nothing)."""


def _note_clause(note: str) -> str:
    """The first clause of a guarantee note (up to `` (`` or ``;``), or the whole note when that clause is short."""
    clause = _NOTE_CLAUSE.split(note, maxsplit=1)[0].strip()
    return clause if len(clause) >= _SHORTEST_CLAUSE else note.strip()


ONE_PARTY_CONDITION = "as long as each person's records sit at one party"
"""The condition of a merged forest's per-record ε (records disjoint across parties): in its guarantee and its
one-sentence verdict (:meth:`DPForest.verdict`)."""

_ONE_PARTY_PER_PERSON = (
    f"epsilon-DP per record (one data row) {ONE_PARTY_CONDITION}; a person with "
    "several rows, at one party or at several, is protected at the sum of the epsilons their rows face (k rows "
    "at one party: k times epsilon; one row per person gives per-person epsilon)."
)
"""Per record, not per person (group privacy): a person's k rows change k leaf counts, so their protection is
the sum over their rows, whether they sit at one party or several."""

FEDERATION_NOTE = (
    f"Across parties, records are assumed disjoint: the global model is {_ONE_PARTY_PER_PERSON} Models from the "
    "same parties add up: a record used by several is protected at the sum of their epsilons."
)
"""The federation caveat of a merged forest: records disjoint across parties, and models of the same parties
composing (sequential composition: the parties' ledgers count every run)."""

PER_RECORD_NOTE = (
    "Per record (one data row), not per person: a person with k rows is protected at k times epsilon (one row per "
    "person gives per-person epsilon)."
)
"""The group-privacy caveat of a model that is never pooled (:class:`~edprf_core.DPMarginalsClassifier`)."""

POOLING_NOTE = f"If pooled with other parties' releases (a federation), the pooled model is {_ONE_PARTY_PER_PERSON}"
"""The federation caveat of one fit (:func:`release_guarantee`): one data holder's model, or one party's release
before it is pooled.  A merged forest states :data:`FEDERATION_NOTE` instead."""


SEEDED_REASON = "its noise came from a fixed research seed: anyone who knows the seed can remove it"
"""Why a seeded release is not DP (every guarantee text says it in these words)."""

FLOAT_NOISE_REASON = (
    "its noise was drawn in floating point (sampler='numpy'), which no DP proof covers (rounding can reveal the "
    "data, Mironov, CCS 2012): use the exact sampler for a release"
)
"""Why a fit drawn by the floating-point sampler is not DP, seeded or not (every guarantee says it in these words)."""

DRAFTED_REASON = "its schema was drafted from data (bounds and categories are data, not public knowledge)"
"""Why a release on a drafted schema is not DP."""


LARGE_EPSILON = 10.0
"""Above this ε per record a DP statement says what the bound means (:func:`large_epsilon_note`)."""


def large_epsilon_note(epsilon: float) -> str:
    """What an ε above :data:`LARGE_EPSILON` means for the people in the data, in one sentence without its final
    stop; ``""`` at or below it.  Privacy cost: none (text)."""
    if not epsilon > LARGE_EPSILON:
        return ""
    shown = f"{epsilon:g}"
    if not float(shown) > LARGE_EPSILON:  # 10.0000001 is not "10" here: the note says it is above 10
        shown = repr(float(epsilon))
    return (
        f"epsilon {shown} per record is a bound that protects little: the odds of any conclusion about one "
        f"record may change by a factor up to e^{shown}; deployments usually keep epsilon at {LARGE_EPSILON:g} "
        "or below"
    )


def _with_large_epsilon_note(statement: str, epsilon: float | None) -> str:
    """``statement`` followed by :func:`large_epsilon_note` of ``epsilon`` (``None``: no note)."""
    note = "" if epsilon is None else large_epsilon_note(epsilon)
    return f"{statement} Note: {note}." if note else statement


def release_guarantee(
    reasons: Sequence[str],
    configured: str,
    *,
    reasons_above: bool = False,
    epsilon: float | None = None,
    note: str = POOLING_NOTE,
) -> str:
    """One fit's privacy statement: NOT differentially private with ``reasons``, or ``configured``; then the
    caveat on pooling it with other parties' releases (:data:`POOLING_NOTE`).  ``configured`` is what the configuration gives when every
    input is DP (a sentence without its final stop).  ``reasons_above``: the statement goes under a headline
    that gives the reasons already, and points to it instead.  ``epsilon``: the fit's ε per record; a DP
    statement above :data:`LARGE_EPSILON` ends with :func:`large_epsilon_note`.  ``note``: the caveat after the
    statement (:data:`PER_RECORD_NOTE` for a model that cannot be pooled)."""
    if reasons:
        return f"{_not_dp(reasons, reasons_above)}Configured for {configured}. {note}"
    return _with_large_epsilon_note(f"{configured}. {note}", epsilon)


def _not_dp(reasons: Sequence[str], reasons_above: bool) -> str:
    """The NOT-DP sentence a statement opens with (``""`` without reasons)."""
    if not reasons:
        return ""
    if reasons_above:
        return "NOT differentially private (the reasons above). "
    return f"NOT differentially private: {'; '.join(reasons)}. "


def check_is_forest(forest: object, what: str, *, marginals_supported: bool = False) -> None:
    """Refuse anything but a :class:`DPForest` where ``what`` (an export, the wire format) needs a forest.

    A forest with a marginals part is refused too unless ``marginals_supported``.

    The DP marginals (:class:`~edprf_core.DPMarginalsClassifier`) are not a forest and have no wire or export
    format yet: they are refused here with that reason, before anything is read.
    """
    if isinstance(forest, DPForest):
        if forest.marginals is not None and not marginals_supported:
            raise ValueError(
                f"{what}: this forest has a marginals part (marginals_share = {forest.marginals_share:g}), which "
                f"{what} does not support yet; fit with marginals_share=0 for a trees-only model"
            )
        return
    kind = type(forest).__name__
    if kind in ("DPMarginalsClassifier", "NoisyMarginals"):
        raise TypeError(
            f"{what}: expected a DPForest, got {kind}: the DP marginals model has no wire or export format yet "
            "(a party cannot release it, and it cannot be exported or explained); use it locally with predict_proba"
        )
    hint = " (pass the estimator's forest_)" if hasattr(forest, "forest_") else ""
    raise TypeError(f"{what}: expected a DPForest, got {kind}{hint}")


@dataclass(frozen=True, eq=False)
class DPForest:
    """A released (or merged) DP forest: schema, parameters, trees.

    Parameters
    ----------
    schema : Schema
    grid_bins : int
        ``n_bins`` used for continuous features without declared edges.
    split_mode : {"binary", "multiway"}
    trees : ForestArrays
    parts : tuple of (str, TrainingParameters, int)
        Contributions: a label (party id, or "local"), the parameters, and
        how many of ``trees`` (consecutive, in order) came from it.
    marginals : NoisyMarginals or None, default None
        The marginals part (:mod:`edprf_core._marginals`): the noisy one-way
        class histograms released on the rows the trees did not see, on the
        grid of ``marginals_bins`` bins of the parts that have one.  Present
        exactly when a part has ``marginals_share > 0``.
    notes : tuple of str, default ()
        Conditions of the guarantee that the parts' parameters cannot show,
        each a sentence: a global model read back from a simulation says that
        its run treated the parties' exact row counts as public
        (:func:`protocol.load_global_model` adds it from the model's manifest).
        :meth:`guarantee` ends its first line with them.  A note only narrows
        a guarantee; it never makes a forest DP (:attr:`dp` ignores notes).
        :func:`merge_forests` keeps every input forest's notes.
    tolerated_parties : int >= 0, default :data:`~edprf_core._leaf_distribution.TOLERATED_PARTIES` (1)
        How many hostile parts acting together the pooling of parts is bounded against (item 5 of
        :mod:`edprf_core._leaf_distribution`), lowered to what the forest's parts can bound (``2 f + 1`` parts
        bound ``f``; :func:`~edprf_core._leaf_distribution.tolerated_among`).  :func:`merge_forests` sets it (a
        coordinator's ``tolerated-parties``), and a global model file records it.  0: no bound (research only).
        The default of forests pickled before it existed (the class attribute) is 1, what they pooled with.
    """

    schema: Schema
    grid_bins: int
    split_mode: str
    trees: ForestArrays
    parts: tuple[tuple[str, TrainingParameters, int], ...]
    marginals: NoisyMarginals | None = None
    notes: tuple[str, ...] = ()
    tolerated_parties: int = TOLERATED_PARTIES
    _routing: dict = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        """One line (an estimator's repr shows its forest): schema, trees, parts, grid, marginals and whether it is
        DP.  :meth:`guarantee` gives the privacy statement, :attr:`trees` the arrays."""
        marginals = f", marginals_bins={self.marginals_bins}" if self.marginals is not None else ""
        trees, parts = count_text(self.n_trees, "tree"), count_text(len(self.parts), "part")
        return (
            f"DPForest(schema={self.schema.name!r}, {trees}, {parts}, split_mode={self.split_mode!r}, "
            f"grid_bins={self.grid_bins}{marginals}, {'DP' if self.dp else 'NOT DP'})"
        )

    def __post_init__(self) -> None:
        _checked_tolerated(self.tolerated_parties)
        if not isinstance(self.notes, tuple):
            raise TypeError(f"notes: expected a tuple of sentences, got {type(self.notes).__name__}")
        if not all(isinstance(n, str) and n.strip() for n in self.notes):
            raise ValueError("notes: expected non-empty strings, got an empty one or another type")
        if sum(n for _, _, n in self.parts) != self.trees.n_trees:
            raise ValueError(
                f"parts account for {sum(n for _, _, n in self.parts)} trees, expected {self.trees.n_trees}"
            )
        for label, params, _ in self.parts:
            if params.split_mode != self.split_mode or params.n_bins != self.grid_bins:
                raise SchemaError(f"part {label!r}: split mode / grid differ from the forest's")
        self._check_marginals()

    def _check_marginals(self) -> None:
        """The marginals part matches the parts' declarations, the schema and the public grid."""
        declared = {p.marginals_bins for _, p, _ in self.parts if p.marginals_share > 0}
        if self.marginals is None:
            if declared:
                raise ValueError("marginals: a part declares marginals_share > 0, expected its marginals, got None")
            return
        if len(declared) != 1:
            raise ValueError(
                f"marginals: expected every part with a marginals part on one grid, got grids {sorted(declared)} "
                "(a forest without a part declaring marginals_share > 0 holds no marginals)"
            )
        m = self.marginals
        if m.n_classes != self.schema.n_classes:
            raise ValueError(f"marginals: expected {self.schema.n_classes} classes, got {m.n_classes}")
        expected = FeatureGrid.from_schema(self.schema, self.marginals_bins).n_codes
        if tuple(m.n_codes) != tuple(expected):
            raise ValueError(f"marginals: expected histograms of {tuple(expected)} codes, got {tuple(m.n_codes)}")
        relations = {p.relation for _, p, _ in self.parts}
        if relations != {m.relation}:
            raise ValueError(f"marginals: expected the relation {sorted(relations)}, got {m.relation!r}")
        if m.residual_pass is not None:
            budget = self.parts[0][1].forest_epsilon
            if len(self.parts) != 1 or not math.isclose(m.part_epsilon, budget, rel_tol=1e-9):
                raise ValueError(
                    f"marginals: a residual pass belongs to one fit whose histograms and pass spend its "
                    f"epsilon - count_epsilon = {budget:g}; got {len(self.parts)} parts spending {m.part_epsilon:g}"
                )

    @property
    def marginals_bins(self) -> int:
        """``n_bins`` of the marginals part's grid (0 without one)."""
        return max(p.marginals_bins for _, p, _ in self.parts)

    @property
    def marginals_share(self) -> float:
        """The marginals part's weight in :meth:`predict_proba`: the mean of the parts' ``marginals_share``.

        Parts without a marginals part count with 0 (see :func:`merge_forests`)."""
        return float(np.mean([p.marginals_share for _, p, _ in self.parts])) if self.marginals is not None else 0.0

    def trees_proba(
        self,
        X: ArrayLike | pd.DataFrame,
        *,
        pooling: str = "log-linear",
        label_shift: bool = True,
        tolerated_parties: int | None = None,
    ) -> NDArray[np.float64]:
        """The trees' own class probabilities: :meth:`predict_proba` without the marginals part.

        Parameters as for :meth:`predict_proba`.  Privacy cost: none (post-processing of the released trees).
        """
        return self._tree_proba(
            self.encode(X), pooling=pooling, label_shift=label_shift, tolerated_parties=tolerated_parties
        )

    def marginals_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """The marginals part's own class probabilities (:func:`edprf_core._marginals.marginal_proba`).

        Privacy cost: none (post-processing of the marginals release).
        """
        from ._marginals import marginal_proba

        if self.marginals is None:
            raise ValueError("this forest has no marginals part (marginals_share = 0)")
        grid = FeatureGrid.from_schema(self.schema, self.marginals_bins)
        return marginal_proba(self.marginals, encode_features(X, self.schema, grid))

    # --------------------------------------------------------------- metadata
    @property
    def grid(self) -> FeatureGrid:
        return FeatureGrid.from_schema(self.schema, self.grid_bins)

    @property
    def n_trees(self) -> int:
        return self.trees.n_trees

    @property
    def classes(self) -> NDArray:
        return np.asarray(self.schema.classes)

    @property
    def epsilon(self) -> float:
        """ε per record, assuming each record sits at one party (see :data:`FEDERATION_NOTE`)."""
        return max(p.epsilon for _, p, _ in self.parts)

    @property
    def max_depth(self) -> int:
        return max(p.max_depth for _, p, _ in self.parts)

    def not_dp_reasons(self) -> list[str]:
        """Every reason this forest is not differentially private (empty when it is).

        In a merged forest, each reason once, with the parts it applies to (the first
        :data:`NAMED_PARTS` by name, then how many more), in the order the parts first give them.
        """
        reasons = [DRAFTED_REASON] if self.schema.is_draft else []
        if len(self.parts) == 1:
            return reasons + self.parts[0][1].not_dp_reasons()
        parts_of: dict[str, list[str]] = {}
        for label, params, _ in self.parts:
            for reason in params.not_dp_reasons():
                parts_of.setdefault(reason, []).append(label)
        for reason, labels in parts_of.items():
            named = _some([repr(label) for label in labels], NAMED_PARTS, NAMED_PARTS)
            whose = f"part {named}" if len(labels) == 1 else f"{len(labels)} of {len(self.parts)} parts ({named})"
            reasons.append(f"{whose}: {reason}")
        return reasons

    @property
    def dp(self) -> bool:
        return not self.not_dp_reasons()

    def guarantee(self, *, reasons_above: bool = False, large_epsilon: bool = True) -> str:
        """The privacy statement of this forest, with the federation caveat when merged.

        ``reasons_above``: the statement goes under a headline that already gives its NOT-DP
        reasons (a federation's guarantee), so it says "NOT differentially private (the reasons above)".
        ``large_epsilon``: a DP statement whose ε per record is above :data:`LARGE_EPSILON` ends with
        :func:`large_epsilon_note` (``False``: the caller states the ε that note is about).
        """
        reasons = self.not_dp_reasons()
        epsilon = self.epsilon if large_epsilon else None
        if len(self.parts) == 1:
            extra = None if self.marginals is None else self.marginals.residual_pass
            residual_epsilon = 0.0 if extra is None else extra.epsilon
            return self._with_notes(
                release_guarantee(
                    reasons, self.parts[0][1].configured(residual_epsilon), reasons_above=reasons_above, epsilon=epsilon
                )
            )
        prefix = _not_dp(reasons, reasons_above)
        header = (
            f"{prefix}Merged forest of {len(self.parts)} parts, {count_text(self.n_trees, 'tree')}; "
            f"each part spends at most epsilon = {self.epsilon:g} per record in all (its trees, and any DP row count "
            f"or marginals part its line below states). {FEDERATION_NOTE}"
        )
        lines = [header]
        groups: dict[str, list[str]] = {}
        for label, p, n in self.parts:
            statement = p.statement()
            if self.schema.is_draft and not p.not_dp_reasons():  # a drafted schema voids every part's guarantee
                statement = f"configured for {p.configured()} (no guarantee: the model is NOT differentially private)."
            groups.setdefault(statement, []).append(f"{label} ({count_text(n, 'tree')})")
        for statement, members in groups.items():
            lines.append(f"  - {_some(members, 3, 4)}: {statement}")
        if not reasons:
            lines[0] = _with_large_epsilon_note(header, epsilon)
        return self._with_notes("\n".join(lines))

    def verdict(self) -> str:
        """The guarantee's headline in one sentence, from the same facts as :meth:`guarantee`: ``NOT
        differentially private: <reasons>.`` (:meth:`not_dp_reasons`), or ε per record, the neighbouring relation
        (each part's own when they differ), for a merged forest its condition (:data:`ONE_PARTY_CONDITION`), the
        first clause of each of the guarantee's notes (a simulation's public row counts) and, above
        :data:`LARGE_EPSILON`, :func:`large_epsilon_note`.  Privacy cost: none (text about public parameters)."""
        reasons = self.not_dp_reasons()
        if reasons:
            return _not_dp(reasons, reasons_above=False).strip()
        relations = sorted({p.relation for _, p, _ in self.parts})
        if len(relations) == 1:
            under = f"per record (one data row) under the {relations[0]} neighbouring relation"
        else:  # replace-one ε-DP is not add-remove ε-DP: no one relation holds for the whole model
            under = (
                f"at most per record (one data row), each part under its own neighbouring relation "
                f"({' or '.join(relations)}: see the guarantee)"
            )
        condition = f", {ONE_PARTY_CONDITION}" if len(self.parts) > 1 else ""
        assumes = "".join(f" ({_note_clause(note)}: see the guarantee)" for note in self.notes)
        statement = (
            f"differentially private: epsilon = {self.epsilon:g} {under}{condition}{assumes}; a person with k rows "
            "is protected at k times epsilon."
        )
        return _with_large_epsilon_note(statement, self.epsilon)

    def _with_notes(self, statement: str) -> str:
        """``statement`` with :attr:`notes` at the end of its first line (the headline)."""
        if not self.notes:
            return statement
        first, newline, rest = statement.partition("\n")
        return f"{first} {' '.join(self.notes)}{newline}{rest}"

    def spent_epsilons(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """ε spent at every node, and ε spent along the path ending at every node.

        A split node at depth d spends its layer's ``eps_{d+1}``; a leaf at
        depth d spends ``tree_eps - sum_{m<=d} eps_m`` (leaf alignment).
        Returns ``(node_spend, path_spend)``, both of length ``n_nodes``; at a
        leaf, ``path_spend`` is the whole root-to-leaf spend, which equals the
        tree's ε.  Privacy cost: none (computed from public structure).
        """
        depth, parent = self.trees.depths_and_parents()
        node_spend = np.empty(self.trees.n_nodes)
        start = 0
        for _, params, n in self.parts:
            a, b = int(self.trees.tree_offsets[start]), int(self.trees.tree_offsets[start + n])
            layer = params.layer_epsilons()
            d = depth[a:b]
            leaf = self.trees.feature[a:b] < 0
            before = np.concatenate([[0.0], np.cumsum(layer)])[d]
            node_spend[a:b] = np.where(leaf, params.tree_epsilon() - before, layer[np.minimum(d, layer.size - 1)])
            start += n
        path_spend = node_spend.copy()
        for level in range(1, int(depth.max(initial=0)) + 1):
            nodes = np.flatnonzero(depth == level)
            path_spend[nodes] += path_spend[parent[nodes]]
        return node_spend, path_spend

    # ------------------------------------------------------------- prediction
    def _table(self) -> RoutingTable:
        if "table" not in self._routing:
            self._routing["table"] = RoutingTable.compile(self.trees, self.grid, self.split_mode, self.max_depth)
        return self._routing["table"]

    def _leafmask(self) -> LeafMaskPredictor | None:
        if "leafmask" not in self._routing:
            fast = None
            if self.split_mode == "binary":
                fast = LeafMaskPredictor.compile(self.trees, self.grid)
            self._routing["leafmask"] = fast
        return self._routing["leafmask"]

    def encode(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.int32]:
        return encode_features(X, self.schema, self.grid)

    def votes(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.int64]:
        """Trees voting for each class, shape (n_samples, n_classes)."""
        return self._votes(self.encode(X))

    def _votes(self, codes: NDArray[np.int32]) -> NDArray[np.int64]:
        fast = self._leafmask()
        if fast is not None:
            return fast.votes(codes, self.grid.n_codes, self.schema.n_classes)
        return self._table().votes(codes, self.schema.n_classes)

    @property
    def has_counts(self) -> bool:
        """Whether any tree released leaf class counts (``leaf="counts"``)."""
        return bool(self.trees.has_counts().any())

    def _noise_scales(self) -> NDArray[np.float64]:
        """Per tree, the scale ``Delta / eps_leaf`` of its leaf-count noise (public parameters)."""
        return np.concatenate(
            [np.full(n, LEAF_COUNT_SENSITIVITY[p.relation] / p.layer_epsilons()[-1]) for _, p, n in self.parts]
        )

    def _distributions(self) -> NDArray[np.float64]:
        if "distributions" not in self._routing:
            self._routing["distributions"] = leaf_distributions(
                self.trees, self.schema.n_classes, SHRINKAGE * self._noise_scales()
            )
        return self._routing["distributions"]

    def predict_proba(
        self,
        X: ArrayLike | pd.DataFrame,
        *,
        pooling: str = "log-linear",
        label_shift: bool = True,
        tolerated_parties: int | None = None,
    ) -> NDArray[np.float64]:
        """Class probabilities pooled from the trees' leaf distributions.

        A tree that released counts gives its leaf's smoothed class
        distribution (:mod:`edprf_core._leaf_distribution`, items 1-2); a
        forest of label trees returns vote shares, whatever ``pooling``.

        Parameters
        ----------
        X : array-like or DataFrame, shape (n_samples, n_features)
        pooling : {"log-linear", "mean"}, default "log-linear"
            ``"log-linear"`` (item 4): each tree's likelihood ratio
            ``p_t(k | x) / pi_t(k)``, weighted per class by the tree's share
            of that class's rows, summed in log space and scaled by
            ``T ** POOLING_EXPONENT``, times the consortium's class mix.
            ``"mean"``: the average of the trees' distributions, every tree
            weighing the same (the rule before log-linear pooling).  A forest
            mixing label trees and count trees has no likelihood ratio for
            its label trees and always uses ``"mean"``.
        label_shift : bool, default True
            Correct each part's class mix to the consortium's.  ``"mean"``:
            multiply part ``j``'s distributions by ``pi / pi_j`` (item 3);
            ``"log-linear"``: take each tree's ratio against its own root
            distribution (``False``: against the consortium's mix, so a
            part's class mix is kept; with one part the two differ only by
            the root's noise and shrinkage).
        tolerated_parties : int >= 0, optional
            How many hostile parts acting together the across-part combination
            is bounded against (item 5), lowered to what the parts can bound
            (``2 f + 1`` parts bound ``f``); default the forest's own
            :attr:`tolerated_parties` (1 unless its merge said otherwise); 0 gives
            the unbounded rule of items 3-4 (for comparisons: one party's forged
            counts can then take the model).

        Returns
        -------
        ndarray, shape (n_samples, n_classes)

        Notes
        -----
        Across parts (merged forests of three parts or more) each part's
        pooled values and weights are combined with bounded influence
        (item 5, :func:`edprf_core._leaf_distribution.bounded_part_mean`):
        no party's released counts can move the result outside the range
        the other parties' values span, widened by ``PLAUSIBLE_CLIP_MARGIN``
        (1.75) times its width if the size it claims is plausible and by
        ``CLIP_MARGIN`` (1) otherwise, and its weight is capped at twice the
        largest of theirs (once if its size is implausible).

        With a marginals part (``marginals_share > 0``) the result is
        proportional to ``p_marginals ** s * p_trees ** (1 - s)`` with ``s``
        :attr:`marginals_share` (:func:`edprf_core._marginals.mix_probabilities`);
        ``pooling``, ``label_shift`` and ``tolerated_parties`` apply to the trees.

        Privacy cost: none.  Every input is a released value (tree structure,
        clamped noisy leaf counts, noisy marginals) or a public parameter (leaf
        budgets, sensitivity); no pooling rule touches the data again, so the output is
        post-processing of the parts' DP releases and is as private as they
        are (post-processing theorem).  A merged forest is DP per record only
        under the federation's disjointness assumption (:data:`FEDERATION_NOTE`).
        """
        codes = self.encode(X)
        trees = self._tree_proba(codes, pooling=pooling, label_shift=label_shift, tolerated_parties=tolerated_parties)
        if self.marginals is None:
            return trees
        from ._marginals import marginal_proba, mix_probabilities

        if self.marginals_bins != self.grid_bins:  # the marginals' own grid; else the trees' codes serve
            codes = encode_features(X, self.schema, FeatureGrid.from_schema(self.schema, self.marginals_bins))
        return mix_probabilities(trees, marginal_proba(self.marginals, codes), self.marginals_share)

    def _tree_proba(
        self,
        codes: NDArray[np.int32],
        *,
        pooling: str,
        label_shift: bool,
        tolerated_parties: int | None,
    ) -> NDArray[np.float64]:
        """The trees' pooled probabilities of the rows ``codes`` (:meth:`predict_proba` without the marginals part)."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if not self.has_counts:
            return self._votes(codes) / float(self.n_trees)
        count_trees = self.trees.tree_has_counts()
        if pooling == "log-linear" and not count_trees.all():
            logger.info(
                "log-linear pooling needs leaf counts in every tree; %d of %d trees released labels only: "
                "using the mean",
                int((~count_trees).sum()),
                self.n_trees,
            )
            pooling = "mean"
        distinct, inverse = self._distinct_rows(codes)
        tolerated = self.tolerated_parties if tolerated_parties is None else tolerated_parties
        if isinstance(tolerated, bool) or not isinstance(tolerated, (int, np.integer)) or tolerated < 0:
            raise ValueError(f"tolerated_parties must be an integer >= 0, got {tolerated_parties!r}")
        vectors, weights = self._pooling_terms(pooling, label_shift, tolerated)
        n_rows, n_classes, n_parts = distinct.shape[0], self.schema.n_classes, len(self.parts)
        out = np.empty((n_rows, n_classes))
        rows_per_chunk = max(1, (1 << 23) // max(1, n_parts * n_classes))
        prior = self._prior(tolerated) if pooling == "log-linear" else None
        for start in range(0, n_rows, rows_per_chunk):
            chunk = slice(start, start + rows_per_chunk)
            pooled = bounded_part_mean(self._part_scores(vectors, distinct[chunk]), weights, tolerated)
            if prior is not None:
                out[chunk] = log_linear_pool(pooled, prior, self.n_trees)
            else:
                out[chunk] = pooled / pooled.sum(axis=1, keepdims=True)
        return out[inverse]

    def _distinct_rows(self, codes: NDArray[np.int32]) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        """The distinct code rows and, per row, its index among them (rows with equal codes predict alike).

        One int64 key per row (the codes in mixed radix) when the grid's code
        space fits, else rows compared whole.  Prediction-time only.
        """
        sizes = np.asarray(self.grid.n_codes, dtype=np.float64)
        # the code space's size in bits (a product of a thousand features' sizes overflows a float: inf, and a warning)
        if codes.shape[1] and float(np.log2(np.maximum(sizes, 1.0)).sum()) < 62:
            radix = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1.0]]).astype(np.int64)
            _, first, inverse = np.unique(codes.astype(np.int64) @ radix, return_index=True, return_inverse=True)
            return codes[first], inverse.ravel()
        distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
        return distinct, inverse.ravel()

    def _pooling_terms(
        self,
        pooling: str,
        label_shift: bool,
        tolerated: int = TOLERATED_PARTIES,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per node, its tree's term of its part's score; per part and class, the part's weight (cached per model).

        Log-linear (item 4): node ``v`` of tree ``t`` in part ``j`` holds
        ``a_tk (log p_v(k) - log ref_tk) / w_jk`` with ``a_tk`` the tree's
        unnormalized class share (:func:`class_share_rows`) and ``w_jk = sum_{t
        in j} a_tk`` the part's weight, so a part's score on a row is the sum
        of one gathered vector per tree.  Mean: ``p_v / T_j`` (label-shift
        corrected when asked) with weight ``T_j``.  Predicting is then: route,
        gather, sum per part, combine the parts (:func:`bounded_part_mean`),
        add the prior.  Privacy cost: none (post-processing).
        """
        # only the ratios against the prior (log-linear without label shift) and the label-shift factors
        # (mean) depend on the tolerated parts; the key keeps them apart
        key = ("terms", pooling, bool(label_shift), tolerated)
        if key not in self._routing:
            n_classes = self.schema.n_classes
            dist = self._distributions()
            tree_of = self.trees.tree_of_node()
            part_of_tree = np.repeat(np.arange(len(self.parts)), [n for _, _, n in self.parts])
            if pooling == "log-linear":
                shares = class_share_rows(self.trees, n_classes, self._noise_scales())
                weights = self._part_sums(shares)  # = part_class_weights(), with the shares kept for below
                within = shares / np.where(weights > 0, weights, 1.0)[part_of_tree]
                log_ref = (
                    np.log(dist[self.trees.tree_offsets[:-1]])
                    if label_shift
                    else np.broadcast_to(np.log(self._prior(tolerated)), (self.n_trees, n_classes))
                )
                with np.errstate(divide="ignore"):
                    log_dist = np.log(dist)
                leaf = self.trees.feature[:, None] < 0
                vectors = np.where(leaf, (log_dist - log_ref[tree_of]) * within[tree_of], 0.0)
            else:
                p = dist
                if label_shift:
                    p = p * self._label_shift(tolerated)[tree_of]
                    p /= p.sum(axis=1, keepdims=True)
                sizes = np.array([n for _, _, n in self.parts], dtype=np.float64)
                vectors = p / sizes[part_of_tree][tree_of][:, None]
                weights = np.repeat(sizes[:, None], n_classes, axis=1)
            self._routing[key] = (np.ascontiguousarray(vectors), weights)
        return self._routing[key]

    def _prior(self, tolerated: int = TOLERATED_PARTIES) -> NDArray[np.float64]:
        """The consortium prior of the parts with counts (:func:`part_consortium_prior`, item 5); cached."""
        key = ("prior", tolerated)
        if key not in self._routing:
            totals = self._part_sums(released_class_totals(self.trees, self.schema.n_classes))
            counted = self._part_sums(self.trees.tree_has_counts().astype(np.float64)[:, None])[:, 0] > 0
            self._routing[key] = part_consortium_prior(totals[counted], tolerated)
        return self._routing[key]

    def _part_scores(self, vectors: NDArray[np.float64], distinct: NDArray[np.int32]) -> NDArray[np.float64]:
        """Per part, the sum over its trees of ``vectors`` at the leaf each row reaches.

        Shape ``(n_parts, n_rows, n_classes)``; one gathered vector per tree and row.
        """
        fast = self._leafmask()
        if fast is not None:
            return fast.part_sums(distinct, self.grid.n_codes, vectors, self.part_bounds)
        table = self._table()
        n_rows, n_classes = distinct.shape[0], vectors.shape[1]
        bounds = self.part_bounds
        out = np.zeros((len(self.parts), n_rows, n_classes))
        per_block = max(1, (1 << 22) // max(1, n_rows * n_classes))
        for j, (a, b) in enumerate(itertools.pairwise(bounds)):
            for start in range(int(a), int(b), per_block):
                leaves = table.leaves(distinct, slice(start, min(int(b), start + per_block)))
                out[j] += vectors[leaves].sum(axis=0)
        return out

    def part_class_totals(self) -> NDArray[np.float64]:
        """Per part, its trees' released class counts summed, less the mass clamping adds, (n_parts, n_classes).

        :func:`edprf_core._leaf_distribution.corrected_class_totals` per tree,
        summed over each part's trees: an estimate of the rows of each class
        the part trained on.  Privacy cost: none (post-processing).
        """
        return self._part_sums(corrected_class_totals(self.trees, self.schema.n_classes, self._noise_scales()))

    def part_pooling(self, X: ArrayLike | pd.DataFrame) -> PartPooling:
        """Each part's terms of log-linear pooling on ``X``: pools any subset of parts exactly.

        What selective aggregation needs to score a candidate set of parties
        as the model it would make (:meth:`PartPooling.pool`).  Needs leaf
        counts in every tree.  Privacy cost: none (post-processing).
        """
        count_trees = self.trees.tree_has_counts()
        if not count_trees.all():
            raise ValueError(
                "part_pooling needs leaf counts in every tree (leaf='counts'); this forest has "
                f"{int((~count_trees).sum())} label-only trees of {self.n_trees}"
            )
        distinct, inverse = self._distinct_rows(self.encode(X))
        vectors, weights = self._pooling_terms("log-linear", True, self.tolerated_parties)
        scores = self._part_scores(vectors, distinct)
        return PartPooling(
            scores[:, inverse, :],
            weights,
            self._part_sums(released_class_totals(self.trees, self.schema.n_classes)),
            np.diff(self.part_bounds),
            self.tolerated_parties,
        )

    @property
    def part_bounds(self) -> NDArray[np.int64]:
        """Tree offsets of the parts: part ``j`` holds trees ``part_bounds[j]:part_bounds[j + 1]``."""
        return np.cumsum([0, *(n for _, _, n in self.parts)]).astype(np.int64)

    def part_class_weights(self) -> NDArray[np.float64]:
        """Each part's class weights ``w_jk`` in the log-linear pooling (item 4): its trees' released class totals
        less the clamping mass, plus 1, summed; shape ``(n_parts, n_classes)``, before item 5's cap.  Privacy cost:
        none (post-processing of released counts and public budgets)."""
        return self._part_sums(class_share_rows(self.trees, self.schema.n_classes, self._noise_scales()))

    def _part_sums(self, per_tree: NDArray[np.float64]) -> NDArray[np.float64]:
        """Sum a per-tree array (first axis) over each part's trees."""
        return np.add.reduceat(per_tree, self.part_bounds[:-1], axis=0)

    def node_distributions(self) -> NDArray[np.float64]:
        """Smoothed class distribution of every node, shape (n_nodes, n_classes) (items 1-2; one-hot for label
        leaves).  Privacy cost: none (post-processing)."""
        return self._distributions()

    def _class_shares(self) -> NDArray[np.float64]:
        """Each tree's share ``a_tk`` of the rows of class ``k`` over all trees (:func:`class_share_weights`)."""
        return class_share_weights(self.trees, self.schema.n_classes, self._noise_scales())

    def _label_shift(self, tolerated: int = TOLERATED_PARTIES) -> NDArray[np.float64]:
        key = ("label_shift", tolerated)
        if key not in self._routing:
            self._routing[key] = label_shift_factors(
                self.trees, self.schema.n_classes, [n for _, _, n in self.parts], tolerated
            )
        return self._routing[key]

    def predict(self, X: ArrayLike | pd.DataFrame) -> NDArray:
        """The most probable class (:meth:`predict_proba`); with label trees only, the majority vote.

        Ties go to the class declared first.
        """
        if self.has_counts or self.marginals is not None:
            return self.classes[np.argmax(self.predict_proba(X), axis=1)]
        return self.classes[np.argmax(self.votes(X), axis=1)]


def merge_forests(
    forests: Sequence[DPForest], labels: Sequence[str] | None = None, *, tolerated_parties: int | None = None
) -> DPForest:
    """Concatenate the trees of several forests into one voting forest.

    This is the federation's aggregation primitive.  All forests must share
    the schema fingerprint, split mode and grid; anything else is refused.

    Marginals parts: the histograms of the forests that have one are summed
    cell by cell after each is bounded (:mod:`edprf_core._marginals_merge`:
    floors at 12 noise scales per cell and class column, a floor on each
    class mass from its noise over all features and, with three or more
    such forests, the trees' cap on each party's class mass), all on one
    marginals grid (differing grids are refused).  The sum carries the effective budget
    ``1 / sqrt(sum_p 1 / eps_p**2)`` whose noise scale is the sum's.  Forests
    without a marginals part (``marginals_share = 0``) contribute trees only;
    the merged model's mixing weight :attr:`DPForest.marginals_share` is the
    mean of the parts' shares, 0 counted for those (the consortium's expected
    share of rows in the marginals when parties weigh alike, since no party's
    size is public).

    ``tolerated_parties`` (default :data:`~edprf_core._leaf_distribution.TOLERATED_PARTIES`, 1): how many
    hostile parts acting together the merge bounds (the marginals' mass cap here, the trees' pooling when the
    merged forest predicts: its :attr:`DPForest.tolerated_parties`); ``2 f + 1`` parts bound ``f``, fewer bound
    as many as they can.  With 1, two colluding parties, each the other's reference, are not held.

    Privacy: merging is post-processing of released forests and costs nothing.
    The merged forest is ε-DP per record with ε the largest of the parts' only
    when the parts were trained on disjoint records (parallel composition
    across parties); a record present in several parts is protected at the sum
    of their ε.  :meth:`DPForest.guarantee` states this.
    """
    forests = list(forests)
    if not forests:
        raise ValueError("merge_forests needs at least one forest")
    tolerated = _checked_tolerated(TOLERATED_PARTIES if tolerated_parties is None else tolerated_parties)
    first = forests[0]
    for i, f in enumerate(forests[1:], start=1):
        if f.schema.fingerprint != first.schema.fingerprint:
            raise SchemaError(
                f"forest {i}: schema fingerprint expected {first.schema.fingerprint}, got {f.schema.fingerprint}"
            )
        if f.split_mode != first.split_mode or f.grid_bins != first.grid_bins:
            raise SchemaError(
                f"forest {i}: split mode/grid expected {first.split_mode}/{first.grid_bins} bins, "
                f"got {f.split_mode}/{f.grid_bins} bins (forests merge only on one grid: fit them with the same "
                "split_mode and an integer n_bins; n_bins='auto' chooses bins from each fit's row count)"
            )
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(forests):
            raise ValueError(f"expected {len(forests)} labels, got {len(labels)}")
        parts = tuple(
            (str(lab), p, n)
            for lab, f in zip(labels, forests)
            for (_, p, n) in [(None, _single_params(f, lab), f.n_trees)]
        )
    else:
        parts = tuple(part for f in forests for part in f.parts)
    return replace(
        first,
        # one fingerprint, but the free text may differ: a part whose schema is a draft (DRAFTED FROM DATA left in
        # a source) makes the merged forest one, whatever the order (rev-s57b N3)
        schema=next((f.schema for f in forests if f.schema.is_draft), first.schema),
        trees=ForestArrays.concatenate([f.trees for f in forests]),
        parts=parts,
        marginals=_merged_marginals(forests, tolerated),
        notes=tuple(dict.fromkeys(note for f in forests for note in f.notes)),  # each once, in order
        tolerated_parties=tolerated,
        _routing={},
    )


def _checked_tolerated(value: object) -> int:
    """``value`` as the number of hostile parts a pooling tolerates (an integer >= 0, not a bool), or ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"tolerated_parties: expected an integer >= 0, got {value!r}")
    return int(value)


def _merged_marginals(forests: Sequence[DPForest], tolerated: int) -> NoisyMarginals | None:
    """The forests' marginals parts summed (:func:`edprf_core._marginals_merge.bounded_marginals_sum`), or None.

    Every forest with a marginals part must use one marginals grid (their histograms are summed cell by
    cell); forests without one contribute trees only.  Each input forest counts as one contributor of the
    bound (a forest that is already a merge brings its sum).  Privacy cost: none (post-processing).
    """
    with_marginals = [(i, f) for i, f in enumerate(forests) if f.marginals is not None]
    if not with_marginals:
        return None
    passes = [i for i, f in with_marginals if f.marginals.residual_pass is not None]
    if passes:
        raise SchemaError(
            f"marginals parts cannot be summed: forest {passes[0]} ran a residual pass, which is fitted to one data "
            "holder's rows (a federation sums histograms only: fit every party with residual_pass=False)"
        )
    grids = {f.marginals_bins for _, f in with_marginals}
    if len(grids) != 1:
        shown = ", ".join(f"forest {i}: {f.marginals_bins} bins" for i, f in with_marginals)
        raise SchemaError(
            f"marginals grids expected one for every forest with a marginals part, got {shown} (a federation "
            "sums the parties' histograms cell by cell: fit every party with the same marginals_bins)"
        )
    from ._marginals_merge import bounded_marginals_sum

    try:
        return bounded_marginals_sum([f.marginals for _, f in with_marginals], tolerated)
    except ValueError as exc:
        raise SchemaError(f"marginals parts cannot be summed: {exc}") from None


def _single_params(forest: DPForest, label: str) -> TrainingParameters:
    if len(forest.parts) != 1:
        raise ValueError(f"cannot relabel forest {label!r}: it is already a merge of {len(forest.parts)} parts")
    return forest.parts[0][1]
