"""The scikit-learn style estimator."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from ._accountant import (
    BudgetAccountant,
    charge_fit,
    clear_pickled_mark,
    epsilon_float,
    pickled_state,
    refuse_fit_after_pickling,
    refuse_unaccounted_pickling,
)
from ._budget import tree_composition
from ._builder import BuildPlan, build_forest
from ._class_order import in_classes_order, sorted_classes
from ._count_noise import discrete_laplace_counts
from ._depth_rule import AUTO_DEPTH_CAP, AUTO_TREE_CAP, DEFAULT_BINS, branching_factor, public_bins, public_shape
from ._domain_warning import warn_if_clipped
from ._encoding import FeatureGrid, encode_features, encode_labels
from ._exact_selection import MAX_FIT_ROWS, UTILITY_SCALE, ExactPermuteAndFlip
from ._exceptions import (
    DataValidationError,
    DraftedSchemaWarning,
    EDPRFWarning,
    PrivacyLeakWarning,
    SeededNoiseWarning,
)
from ._fit_context import caller_outside_package, inputs_not_dp
from ._forest import (
    LEAF_COUNT_SENSITIVITY,
    LEAF_OUTPUTS,
    MAX_DEPTH_LIMIT,
    RELATIONS,
    SIZE_CHOICES,
    DPForest,
    TrainingParameters,
)
from ._input_checks import (
    check_fit_input,
    check_predict_input,
    log_of,
    refuse_continuous_target,
    refused_cells_named,
    schema_input_tags,
    warn_if_labels_read,
)
from ._marginals import (
    MIX_SHARE_THRESHOLD,
    marginals_n_bins,
    marginals_rows,
    marginals_share_rule,
    release_marginals,
)
from ._mechanisms import ExponentialMechanism, LaplaceMechanism, PermuteAndFlip
from ._randomness import RandomState, make_generator, spawn_generators
from ._residual_pass import RESIDUAL_HISTOGRAM_SHARE, release_residual_pass, residual_pass_rule
from ._schema import Schema, load_schema
from ._tree import MAX_FIT_NODES, SPLIT_MODES, max_tree_nodes

if TYPE_CHECKING:
    from sklearn.utils import Tags

__all__ = [
    "EDPRFClassifier",
    "FitSize",
    "PaperOptions",
    "admit_fit",
    "fit_size",
    "refuse_bool_counts",
    "refuse_bool_reals",
    "resolved_schema",
    "training_tags",
]

_SPLIT_SENSITIVITY = {"add-remove": 2.0, "replace-one": 4.0}


@dataclass(frozen=True)
class PaperOptions:
    """The paper-reproduction options (:class:`edprf_core.research.PaperEDPRFClassifier`).

    The defaults are what :class:`EDPRFClassifier` always uses: the harmonic
    layer schedule, parallel composition across trees, permute-and-flip, the
    monotone noise scale under add-remove, no "stop when pure" rule, and the
    exact sampler unless a seed is given.
    """

    schedule: str = "harmonic"
    composition: str = "parallel"
    variant: str = "pf"
    exploit_monotonicity: bool | None = None
    stop_when_pure: bool = False
    sampler: str = "auto"


_COUNT_PARAMETERS = ("n_trees", "max_depth", "max_depth_cap", "n_rows_public", "n_bins")
"""Integer parameters: scikit-learn's ``Interval(Integral, ...)`` admits ``True``, which is no count."""


def refuse_bool_counts(estimator: BaseEstimator, names: tuple[str, ...] = _COUNT_PARAMETERS) -> None:
    """Refuse ``True``/``False`` given for one of the integer parameters ``names`` (scikit-learn's wording)."""
    for name in names:
        if isinstance(getattr(estimator, name), bool):
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} must be an int, not a bool. "
                f"Got {getattr(estimator, name)!r} instead."
            )


_REAL_PARAMETERS = ("epsilon", "count_epsilon_share", "marginals_share")
"""Real parameters: scikit-learn's ``Interval(Real, ...)`` admits ``True`` (read as 1: ``epsilon=True`` fit at 1)."""


def refuse_bool_reals(estimator: BaseEstimator, names: tuple[str, ...] = _REAL_PARAMETERS) -> None:
    """Refuse ``True``/``False`` given for one of the real parameters ``names``: a bool is no number."""
    for name in names:
        value = getattr(estimator, name)
        if isinstance(value, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__}: expected a number, got bool ({value!r})"
            )


def resolved_schema(schema: object, owner: str) -> Schema:
    """The estimator parameter ``schema`` as a :class:`Schema` (loaded when a path); ``owner`` names the estimator."""
    if schema is None:
        raise ValueError(
            f"{owner} needs a public schema (schema=Schema or a TOML path); "
            "use edprf_core.draft_schema only to start writing one"
        )
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, (str, Path)):
        return load_schema(schema)
    raise TypeError(f"schema must be a Schema or a path, got {type(schema).__name__}")


def admit_fit(
    estimator: BaseEstimator, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series, schema: Schema
) -> ArrayLike | pd.Series:
    """What every fit does before it may read a value: check the input's layout, refuse too many rows, charge.

    Order: the refusal of an estimator pickled inside a ``budget()`` block and refit where none is open
    (:func:`~edprf_core._accountant.refuse_fit_after_pickling`), :func:`check_fit_input` (types, shapes and
    column names only), the ``MAX_FIT_ROWS`` refusal (before
    any charge: nothing is released), :func:`charge_fit` of the estimator's whole ``epsilon`` in (0, inf) to
    its ``accountant``, then :func:`refuse_continuous_target` (it reads label values, so after the charge;
    its exception is local to the caller, never released, and the charge does not make it DP).  Returns ``y`` as a 1-D array-like.  Privacy cost: none by itself; it records the fit's ``epsilon`` before
    anything is drawn.
    """
    refuse_fit_after_pickling(estimator)  # pickled inside a budget() block, refit where none is open
    y = check_fit_input(estimator, X, y, schema)
    if len(y) > MAX_FIT_ROWS:  # a local refusal before any charge: nothing is released
        raise DataValidationError(
            f"fit accepts at most {MAX_FIT_ROWS} rows (the integer widths of the exact "
            "sampler are proven up to it); train on a random subset"
        )
    owner = type(estimator).__name__
    charge_fit(estimator.accountant, epsilon_float(estimator.epsilon), label=f"{owner}.fit on schema {schema.name!r}")
    clear_pickled_mark(estimator)  # a marked copy got here only with an accountant: this refit was charged
    if len(y) == 0:  # not refused (a party's filtered rows may be none: that is data); said to the caller
        warnings.warn(
            f"{owner}.fit on 0 rows: the model is noise alone (its epsilon is spent all the same)",
            EDPRFWarning,
            stacklevel=3,
        )
    if getattr(estimator, "random_state", None) is not None:  # scikit-learn habit: random_state=42
        warnings.warn(
            f"{owner}.fit with random_state set: its noise comes from a fixed research seed, so the model is NOT "
            "differentially private (anyone who knows the seed can remove the noise); leave random_state=None for "
            "a DP model",
            SeededNoiseWarning,
            stacklevel=3,
        )
    if schema.is_draft:  # the estimator's guarantee says so too; a caller who reads only dp_ later needs a word now
        warnings.warn(
            f"{owner}.fit on a drafted schema ({schema.name!r}, {schema.draft_note}): its bounds and categories were "
            "read from the data, so the model is NOT differentially private; replace them with public knowledge, "
            "write where each came from in its source, and delete drafted = true for a DP model",
            DraftedSchemaWarning,
            stacklevel=3,
        )
    refuse_continuous_target(y, schema)  # reads label values: after the charge
    return y


@dataclass(frozen=True)
class FitSize:
    """The row count the automatic rules read, and what it cost.

    Attributes
    ----------
    size : int >= 1
        ``n_rows_public``, or the DP count floored at 1.
    count_epsilon : float in [0, epsilon)
        ε of the DP count (0 when the size was declared).
    rule : {"declared-size", "dp-count"}
    estimate : int or None
        The DP count as drawn (may be negative), None when the size was declared.
    """

    size: int
    count_epsilon: float
    rule: str
    estimate: int | None


@dataclass(frozen=True)
class FitShape:
    """What :meth:`EDPRFClassifier.fit` grows, chosen from public figures before any mechanism reads the rows.

    Attributes
    ----------
    n_trees, max_depth, n_bins : int
        The trees' shape and grid.
    count_epsilon : float in [0, epsilon)
        ε of the DP row count (0 when none was drawn).
    rule : {"fixed", "declared-size", "dp-count"}
    estimate : int or None
        The DP count as drawn, None when none was drawn.
    marginals_share : float in [0, 1)
        Expected share of the rows for the marginals part (0: none).
    marginals_bins : int
        The marginals part's grid (0 without one).
    residual_pass : bool
        Whether the marginals part runs a residual pass (:mod:`edprf_core._residual_pass`).
    chosen : tuple of str
        Which of the trees, depth, bins and marginals share the automatic rules chose (empty: all given).
    """

    n_trees: int
    max_depth: int
    count_epsilon: float
    rule: str
    estimate: int | None
    n_bins: int
    marginals_share: float
    marginals_bins: int
    residual_pass: bool = False
    chosen: tuple[str, ...] = ()


def fit_size(
    n_rows_public: int | None,
    count_epsilon_share: float,
    epsilon: float,
    n_rows: int,
    rng: np.random.Generator | None,
) -> FitSize:
    """``n_rows_public`` when declared, else a DP count of the ``n_rows`` training rows.

    Parameters
    ----------
    n_rows_public : int >= 1 or None
        A row count that is public knowledge; nothing is spent when given.
    count_epsilon_share : float in (0, 0.5]
        Share of ``epsilon`` the count spends.
    epsilon : float in (0, inf)
        The fit's whole budget.
    n_rows : int
        The true number of training rows (read only by the mechanism).
    rng : numpy Generator or None
        None: OpenDP's exact sampler (production); a Generator: the seeded research approximation.

    Privacy cost: ``count_epsilon_share * epsilon`` when ``n_rows_public`` is None (a discrete Laplace count of
    L1 sensitivity 1 under add-remove; a replaced record leaves this count unchanged, though at a party it can
    move the count by 1 by landing on the other side of the held-out split, which the sensitivity covers),
    nothing otherwise.  The
    caller's other releases share the rest (sequential composition).

    Warns
    -----
    PrivacyLeakWarning
        When ``n_rows_public`` equals ``n_rows``: a size read from the data (``len(X)``) makes the shape
        data-dependent.  Local only (nothing is released by the warning); the declared value is still used.
    """
    if n_rows_public is not None:
        if int(n_rows_public) == int(n_rows):
            warnings.warn(
                f"n_rows_public={int(n_rows_public)} is exactly the number of training rows: if it was read from "
                "the data (len(X)), the model's shape depends on the data and the fit is not epsilon-DP. Declare "
                "a figure that is public knowledge (e.g. a published or rounded registry size), or leave "
                "n_rows_public=None for a DP count within epsilon; ignore this warning if the exact size is public.",
                PrivacyLeakWarning,
                stacklevel=caller_outside_package(),
            )
        return FitSize(int(n_rows_public), 0.0, "declared-size", None)
    count_eps = float(count_epsilon_share) * float(epsilon)
    estimate = int(discrete_laplace_counts(np.array([n_rows]), count_eps, 1, rng=rng)[0])
    return FitSize(max(1, estimate), count_eps, "dp-count", estimate)


FIT_REFUSAL_HINT = (
    "; this fit was charged (the error depends on the values: docs/estimator.md). Keep the rows every rule "
    "accepts first: keep, notes = edprf_core.encoding.conforming_rows(X, y, schema); X, y = X[keep], y[keep] "
    "(or declare such a cell among the schema's missing_values)"
)
"""Appended to a fit's refusal of a feature cell (library-user review S3-10)."""

LABEL_REFUSAL_HINT = (
    "; this fit was charged (the error depends on the values: docs/estimator.md). Declare the labels' other "
    'spellings in the schema ([label] aliases = { "yes" = 1, "no" = 0 }), or read them into declared classes '
    "first (y = schema.read_labels(y)); or keep the rows every rule accepts: keep, notes = "
    "edprf_core.encoding.conforming_rows(X, y, schema); X, y = X[keep], y[keep]"
)
"""Appended to a fit's refusal of a label (scikit-learn user review K10: a label got the feature cells' hint)."""

ARRAY_ORDER_HINT = (
    "; X is an array, read in the schema's feature order {order}: if its columns are in another order, pass a "
    "DataFrame (matched by column name)"
)
"""Added to a fit's refusal of a feature cell when ``X`` is no DataFrame (review K10)."""


def feature_refusal_hint(X: object, schema: Schema) -> str:
    """What a fit's refusal of a feature cell of ``X`` adds: :data:`FIT_REFUSAL_HINT`, and for an array
    :data:`ARRAY_ORDER_HINT` first.  Privacy cost: none (X's type and the schema)."""
    if isinstance(X, pd.DataFrame):
        return FIT_REFUSAL_HINT
    return ARRAY_ORDER_HINT.format(order=list(schema.feature_names)) + FIT_REFUSAL_HINT


@contextmanager
def fit_refusal_hint(hint: str = FIT_REFUSAL_HINT) -> Iterator[None]:
    """Re-raise a :class:`DataValidationError` of the rows' values during a fit with ``hint`` appended
    (:data:`FIT_REFUSAL_HINT` for feature cells, :func:`feature_refusal_hint`, :data:`LABEL_REFUSAL_HINT`)."""
    try:
        yield
    except DataValidationError as exc:
        raise DataValidationError(f"{exc}{hint}") from None


def training_tags(tags: Tags, schema: object, owner: str, random_state: object = None) -> Tags:
    """The tags of an estimator that trains under the schema parameter ``schema`` (``owner``: its name).

    Non-deterministic unless seeded (``random_state=None`` draws fresh cryptographic randomness in every fit; a
    seed reproduces the fit, NOT DP), and the input tags the schema's rules give (:func:`schema_input_tags`; none
    while no usable schema is set).
    """
    # an integer seed reproduces the fit; None (cryptographic randomness) and a generator instance (its state moves
    # on with every fit) do not
    tags.non_deterministic = not isinstance(random_state, Integral) or isinstance(random_state, bool)
    try:
        resolved = resolved_schema(schema, owner)
    except (ValueError, TypeError):  # no usable schema yet: fit will say why
        resolved = None
    return schema_input_tags(tags, resolved)


class EDPRFClassifier(ClassifierMixin, BaseEstimator):
    """Differentially private random forest (eDPRF / pfDPDT).

    Each tree is grown level by level: a split node picks its split with
    permute-and-flip on the weighted-Gini utility; a leaf releases its class
    counts with discrete Laplace noise (``leaf="counts"``, the default), or
    picks its class with permute-and-flip on the class counts
    (``leaf="label"``, the paper's leaves).  Feature domains, bins and classes
    come from the public ``schema``; tree shapes depend only on the depth, the
    schema and the mechanisms' outputs.

    Parameters
    ----------
    schema : Schema or path to a schema TOML
        The declared public schema.  Required: nothing is inferred from data.
    epsilon : float in (0, inf), default 1.0
        Privacy budget of the whole fit per record (trees, and the DP row
        count when one is needed).
    n_trees : int >= 1 or "auto", default "auto"
        Number of trees T.  ``"auto"``: one tree unless the data are large
        enough for more (:func:`edprf_core.shape.public_shape`), from the same row
        count as ``max_depth="auto"``.  An integer must not be derived from the
        number of rows unless that number is public.
    max_depth : int in [1, 30] or "auto", default "auto"
        Split levels per tree; a tree has ``max_depth + 1`` node layers (the
        eDPRF paper's depth D).  ``"auto"``: the public-depth rule
        (:func:`edprf_core.shape.public_depth`) applied to ``n_rows_public`` when
        given, else to a DP count of the rows that spends
        ``count_epsilon_share * epsilon`` (the guarantee text says which).
    max_depth_cap : int in [1, 30], default 12
        The deepest tree ``max_depth="auto"`` may choose.
    n_rows_public : int >= 1 or None, default None
        A number of training rows that is public knowledge (declared, not
        measured on the private data), used by the automatic rules instead
        of a DP count.  A value equal to the exact number of training rows
        raises :class:`PrivacyLeakWarning` (``len(X)`` is not public).
    count_epsilon_share : float in (0, 0.5], default 0.05
        Share of ``epsilon`` spent on the DP row count when an automatic rule
        needs a size and ``n_rows_public`` is not given (sequential
        composition: the trees get the rest).
    leaf : {"counts", "label"}, default "counts"
        What each leaf releases.  ``"counts"``: the leaf's class counts with
        exact discrete Laplace noise at the leaf's budget (L1 sensitivity 1
        under add-remove, 2 under replace-one), clamped at 0; ``predict_proba``
        then gives smoothed class probabilities (risk scores) and ``predict``
        their argmax.  ``"label"``: the paper's permute-and-flip label (votes).
    split_mode : {"binary", "multiway"}, default "binary"
        ``multiway``: the paper's splits, one child per category or bin, each
        feature once per path.  ``binary``: permute-and-flip over (feature,
        threshold) candidates on the public grid and one-vs-rest categories;
        features reusable along a path.
    n_bins : int >= 2 or "auto", default "auto"
        ``"auto"``: :func:`edprf_core.shape.public_bins` of the trees' expected
        share of the public size, ``round((1 - s) * n)`` (``s``: the marginals
        share), at the trees' ε (``epsilon`` less the DP row count's share):
        3 bins below ``n * ε = 250``, 10 below 8,000, else 20.
        Equal-width bins of the declared bounds for continuous features that
        declare no edges (multiway: children; binary: ``n_bins - 1`` thresholds).
    marginals_bins : int >= 2 or "auto", default "auto"
        ``n_bins`` of the marginals part's public grid.  ``"auto"``: the marginals bins rule
        (:func:`edprf_core._marginals.marginals_n_bins`) of the part's share of the public size when
        ``n_bins`` is automatic, else ``n_bins``.  A federation fixes one grid for every party (the
        coordinator's request), since parties' histograms are summed.
    relation : {"add-remove", "replace-one"}, default "add-remove"
        Neighbouring relation of the guarantee.  Sensitivities: split utility
        2 (add-remove) or 4 (replace-one); class counts 1 (add-remove) or 2
        (replace-one).
    random_state : None, int, numpy Generator, SeedSequence or RandomState, default None
        ``None`` draws from the operating system in every ``fit`` and samples
        every release exactly with OpenDP (the production setting); a seed switches to the vectorized floating-point numpy
        backend (fast, reproducible: tests, simulations, benchmarks), and the guarantee text
        says NOT differentially private (anyone who knows the seed can remove
        the noise, and no DP proof covers floating-point noise).  The backend used is recorded in
        ``privacy_.sampler``.
    sampler : {"auto", "exact"}, default "auto"
        ``"auto"``: as ``random_state`` says.  ``"exact"`` insists on the
        exact OpenDP samplers: a seeded fit is refused.  (The numpy sampler
        without a seed is a research option, :mod:`edprf_core.research`.)
    accountant : BudgetAccountant or None, default None
        Charged ``epsilon`` at the start of every ``fit``, before anything is
        trained; a fit that would exceed its cap raises
        :class:`BudgetExceededError`.  ``None`` charges the process default
        (:func:`edprf_core.accounting.set_default_accountant`, :func:`edprf_core.budget`)
        when one is set, else nothing is accounted.  Clones share it.
    marginals_share : float in [0, 1) or "auto", default "auto"
        Expected share of the rows given to the *marginals part* instead of
        the trees: each row goes there independently with this probability
        (public randomness), and those rows release DP one-way marginals,
        one class-count histogram per feature with discrete Laplace noise at
        ``(epsilon - count_epsilon) / d`` each, 60 % of that with a residual
        pass (:mod:`edprf_core._marginals`).
        ``predict_proba`` pools the two parts, proportional to
        ``p_marginals ** s * p_trees ** (1 - s)``.  ``"auto"``: for two
        classes 0 when ``n * epsilon / d < 2`` and 0.9 otherwise
        (``n``: ``n_rows_public`` or the DP row count), for more classes 0
        (trees only); chosen on inner validation splits of training rows of
        nine datasets (``benchmarks/results/rule_transfer_estimator.md``).
        0: trees only (the model before the marginals part).
    residual_pass : bool or "auto", default "auto"
        Whether the marginals part (two classes) follows its histograms with
        one backfitting pass on its rows' residuals
        (:mod:`edprf_core._residual_pass`): the histograms then spend 60 %
        of the part's ``epsilon - count_epsilon`` and the pass, one noisy
        integer residual sum per bin of every feature, the other 40 %, so
        the fit still costs ε.  It corrects the double counting of
        correlated features and ranks better where rows are plentiful.
        ``"auto"``: with ``marginals_share="auto"``, the public rule
        :func:`edprf_core._residual_pass.residual_pass_rule` (ε >= 0.5 and
        ``n * epsilon / d >= 220``, chosen on inner validation splits of
        nine datasets, ``benchmarks/results/residual_constants.md``); with a
        given share, no pass.  A party's release never carries one (the
        summed histograms of a federation have no pass).

    Attributes
    ----------
    forest_ : DPForest
        The released forest (schema, parameters, trees).
    schema_ : Schema
        The schema the model was fitted under (``forest_.schema``): ``schema_.read_labels(y)`` gives the
        declared classes raw labels read as, for scikit-learn's metrics and scorers.
    classes_ : ndarray
        The schema's declared classes, sorted (scikit-learn's order, which its
        scorers and calibration assume; :mod:`edprf_core._class_order`), always
        all of them, also those absent from ``y`` (scikit-learn's classifiers
        take ``np.unique(y)``): which labels occur in the private rows is data,
        so the class list is public and invariant, and ``predict_proba`` has
        one column per declared class, in this order (the model, ``forest_``,
        keeps the declared order).  ``predict`` returns declared classes; for
        scikit-learn's metrics read raw labels with
        :meth:`Schema.read_labels` first (aliases, text numbers).
    n_features_in_ : int
        The schema's feature count.
    feature_names_in_ : ndarray of str
        The schema's feature names, in model order, after a ``fit`` on a
        DataFrame (absent after fitting on an array, as in scikit-learn).
        A DataFrame is matched by column name at ``fit`` and at ``predict``
        alike, in any column order; the schema's ``ignored_columns`` are
        dropped by rule, and a missing feature column is an error naming it.
        An array is read in the schema's feature order.
    privacy_ : TrainingParameters
        ε, relation, schedule, split mode, trees, depth and the ``dp`` flag.
    dp_ : bool
        Whether the model is differentially private: False when a research seed (``random_state``), the
        floating-point sampler (seeded or not), a drafted schema or a research option of
        :mod:`edprf_core.research` breaks the guarantee, or when the fit found in its callers a ``Pipeline``
        step fitted on the same rows before it or a search refitting the settings that scored best on these
        rows (:mod:`edprf_core._fit_context`; ``forest_.dp``).  It covers the fit's own mechanisms and what
        the estimator can see: settings chosen on the rows in a way it cannot see (by hand, a search it is
        not called from) are assumed chosen without them, as ``guarantee_`` says.
        ``privacy_.dp`` is narrower: whether the training options alone keep the tree shapes data-independent.
    guarantee_ : str
        The privacy statement (``forest_.guarantee()``): what the fit spent, or NOT differentially private
        with every reason.
    n_trees_ : int
        Trees grown (``n_trees`` or the automatic rule's choice).
    max_depth_ : int
        Depth grown (``max_depth`` or the automatic rule's choice).
    n_bins_ : int
        Bins used (``n_bins`` or the automatic rule's choice).
    n_rows_estimate_ : int or None
        The DP row count the automatic rules used (released with discrete
        Laplace noise; may be off by a few rows or be negative), or None when
        no count was drawn.
    marginals_share_ : float
        The share used (0: no marginals part).
    marginals_bins_ : int
        Bins of the marginals part's public grid (0 without one): 5 when
        ``share * n * (epsilon - count_epsilon) / d < 300``, else 20
        (``n_bins="auto"``), or
        ``n_bins``.
    residual_pass_ : bool
        Whether the marginals part ran a residual pass.

    Notes
    -----
    Privacy cost of ``fit``: ε per record under ``relation``.  When an
    automatic rule needs a size and ``n_rows_public`` is None, a DP count of
    the rows spends ``count_epsilon_share * ε`` first and the trees share the
    rest (sequential composition).  With a marginals part, the rows are
    split at random, independently of the data, into the marginals' rows and
    the trees' rows; each part spends ``ε - count_epsilon`` on its own rows,
    so a record meets one of them (parallel composition) and the fit costs ε.  The trees see disjoint random subsets of
    the rows (each ε-DP, parallel composition).  Within a tree each
    root-to-leaf path spends exactly its tree's ε under the harmonic layer
    schedule (see :mod:`edprf_core._budget`).

    The paper's baselines (other schedules, sequential composition, the
    exponential mechanism, "stop when pure", the numpy sampler without a
    seed) are in :class:`edprf_core.research.PaperEDPRFClassifier`.
    """

    _parameter_constraints: ClassVar[dict] = {
        "schema": [Schema, str, Path, None],
        "epsilon": [Interval(Real, 0, math.inf, closed="neither")],
        "n_trees": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "max_depth": [Interval(Integral, 1, MAX_DEPTH_LIMIT, closed="both"), StrOptions({"auto"})],
        "max_depth_cap": [Interval(Integral, 1, MAX_DEPTH_LIMIT, closed="both")],
        "n_rows_public": [Interval(Integral, 1, None, closed="left"), None],
        "count_epsilon_share": [Interval(Real, 0, 0.5, closed="right")],
        "leaf": [StrOptions(set(LEAF_OUTPUTS))],
        "split_mode": [StrOptions(set(SPLIT_MODES))],
        "n_bins": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "relation": [StrOptions(set(RELATIONS))],
        "random_state": [
            None,
            Interval(Integral, 0, None, closed="left"),
            np.random.Generator,
            np.random.SeedSequence,
            np.random.RandomState,
        ],
        "sampler": [StrOptions({"auto", "exact"})],
        "accountant": [BudgetAccountant, None],
        "marginals_share": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "marginals_bins": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "residual_pass": ["boolean", StrOptions({"auto"})],
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
        marginals_share: float | str = "auto",
        marginals_bins: int | str = "auto",
        residual_pass: bool | str = "auto",
    ) -> None:
        self.schema = schema
        self.epsilon = epsilon
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.max_depth_cap = max_depth_cap
        self.n_rows_public = n_rows_public
        self.count_epsilon_share = count_epsilon_share
        self.leaf = leaf
        self.split_mode = split_mode
        self.n_bins = n_bins
        self.relation = relation
        self.random_state = random_state
        self.sampler = sampler
        self.accountant = accountant
        self.marginals_share = marginals_share
        self.marginals_bins = marginals_bins
        self.residual_pass = residual_pass

    # ------------------------------------------------------------------ fit
    def _paper_options(self) -> PaperOptions:
        """The paper-reproduction options; the production estimator sets only the sampler."""
        return PaperOptions(sampler=self.sampler)

    def _resolved_schema(self) -> Schema:
        return resolved_schema(self.schema, type(self).__name__)

    def _parameters(
        self,
        n_trees: int,
        max_depth: int,
        count_epsilon: float = 0.0,
        depth_rule: str = "fixed",
        n_bins: int | None = None,
        marginals_share: float = 0.0,
        marginals_bins: int = 0,
        chosen: tuple[str, ...] | None = None,
        inputs_not_dp: tuple[str, ...] = (),
    ) -> TrainingParameters:
        options = self._paper_options()
        monotone = options.exploit_monotonicity
        if monotone is None:
            monotone = self.relation == "add-remove"
        return TrainingParameters(
            epsilon=self.epsilon,
            relation=self.relation,
            schedule=options.schedule,
            composition=options.composition,
            split_mode=self.split_mode,
            variant=options.variant,
            max_depth=max_depth,
            n_trees=n_trees,
            n_bins=(DEFAULT_BINS if self.n_bins == "auto" else self.n_bins) if n_bins is None else n_bins,
            exploit_monotonicity=bool(monotone),
            dp=not options.stop_when_pure,
            seeded=self.random_state is not None,
            sampler=self._resolved_sampler(),
            leaf=self.leaf,
            count_epsilon=count_epsilon,
            depth_rule=depth_rule,
            marginals_share=marginals_share,
            marginals_bins=marginals_bins,
            chosen=chosen,
            inputs_not_dp=inputs_not_dp,
        )

    def _shape(self, schema: Schema, n_rows: int, rng: np.random.Generator | None) -> FitShape:
        """Trees, depth, bins and the marginals part's share and bins, with the row count they read.

        Privacy cost: ``count_epsilon_share * epsilon`` when an automatic rule
        needs a size and ``n_rows_public`` is None (a discrete Laplace count of
        sensitivity 1, exact without a seed); nothing otherwise.  The rules
        read only that public size, the schema and ``epsilon``.
        """
        auto_trees, auto_depth = self.n_trees == "auto", self.max_depth == "auto"
        auto_bins = self.n_bins == "auto"
        requested = self.marginals_share
        auto_share = requested == "auto" and schema.n_classes == 2
        share = 0.0 if requested == "auto" else float(requested)
        given_marginals_bins = None if self.marginals_bins == "auto" else int(self.marginals_bins)
        if not (auto_trees or auto_depth or auto_bins or auto_share):
            bins = int(self.n_bins)
            marginals_bins = (bins if given_marginals_bins is None else given_marginals_bins) * (share > 0)
            residual = self._residual_pass_on(schema, share, None, epsilon_float(self.epsilon))
            return FitShape(
                int(self.n_trees), int(self.max_depth), 0.0, "fixed", None, bins, share, marginals_bins, residual
            )
        counted = fit_size(self.n_rows_public, self.count_epsilon_share, epsilon_float(self.epsilon), n_rows, rng)
        size, count_eps, rule, estimate = counted.size, counted.count_epsilon, counted.rule, counted.estimate
        forest_eps = epsilon_float(self.epsilon) - count_eps
        if auto_share:
            share = marginals_share_rule(size, schema.n_features, schema.n_classes, epsilon_float(self.epsilon))
        # each part's rules read its expected share of the public size
        tree_size = max(1, round((1.0 - share) * size))
        n_bins = public_bins(tree_size, forest_eps) if auto_bins else int(self.n_bins)
        n_trees, depth = public_shape(
            tree_size,
            forest_eps,
            n_trees=None if auto_trees else int(self.n_trees),
            max_depth=None if auto_depth else int(self.max_depth),
            schedule=self._paper_options().schedule,
            branching=branching_factor(schema, self.split_mode, n_bins),
            depth_cap=int(self.max_depth_cap),
            leaf=self.leaf,
        )
        marginals_bins = 0
        if share > 0 and given_marginals_bins is not None:
            marginals_bins = given_marginals_bins
        elif share > 0:
            marginals_size = max(1, round(share * size))
            marginals_bins = (
                marginals_n_bins(marginals_size, schema.n_features, forest_eps) if auto_bins else int(self.n_bins)
            )
        residual = self._residual_pass_on(schema, share, size if auto_share else None, epsilon_float(self.epsilon))
        automatic = zip(SIZE_CHOICES, (auto_trees, auto_depth, auto_bins, auto_share), strict=True)
        chosen = tuple(name for name, auto in automatic if auto)
        return FitShape(n_trees, depth, count_eps, rule, estimate, n_bins, share, marginals_bins, residual, chosen)

    def _residual_pass_on(self, schema: Schema, share: float, auto_size: int | None, epsilon: float) -> bool:
        """Whether the marginals part runs a residual pass: as requested, or (``"auto"``) by the public rule of
        the public size ``auto_size`` when the share itself was automatic (None: it was given).  Privacy cost:
        none (a rule on public figures)."""
        if self.residual_pass == "auto":
            return (
                auto_size is not None
                and share > 0
                and residual_pass_rule(auto_size, schema.n_features, schema.n_classes, epsilon)
            )
        if self.residual_pass and (share <= 0 or schema.n_classes != 2):
            why = ""
            if auto_size is not None and share <= 0 and schema.n_classes == 2:
                why = (
                    f" (marginals_share='auto' keeps the trees alone when n * epsilon / d < {MIX_SHARE_THRESHOLD:g}: "
                    f"here n = {auto_size}, the public size, and d = {schema.n_features}; give marginals_share or "
                    "set residual_pass='auto')"
                )
            raise ValueError(
                "residual_pass=True needs a marginals part on a two-class task (marginals_share > 0, two classes), "
                f"got marginals_share = {share:g} with {schema.n_classes} classes{why}"
            )
        return bool(self.residual_pass)

    def _refuse_oversized(self) -> None:
        """Refuse, before the charge, binary trees that may hold more than :data:`MAX_FIT_NODES` nodes.

        From the public options alone: ``n_trees`` or, when automatic, :data:`AUTO_TREE_CAP`; ``max_depth`` or,
        when automatic, ``max_depth_cap``.  A binary tree holds the full tree's nodes at most (a path ends early
        only when the splits above it leave no candidate), so the bound is what the fit can build.  A multiway tree's worst case (the widest features at every layer) can
        exceed what it builds by a hundred times: it is not refused here (a party's release bound still applies).
        """
        if self.split_mode != "binary":
            return
        trees = int(self.n_trees) if isinstance(self.n_trees, Integral) else AUTO_TREE_CAP
        depth = int(self.max_depth) if isinstance(self.max_depth, Integral) else int(self.max_depth_cap)
        nodes = trees * max_tree_nodes((), "binary", depth)
        if nodes <= MAX_FIT_NODES:
            return
        trees_text = (
            f"{trees} tree(s)" if isinstance(self.n_trees, Integral) else f"up to {trees} trees (n_trees='auto')"
        )
        depth_text = (
            f"depth {depth}" if isinstance(self.max_depth, Integral) else f"depth up to {depth} (max_depth_cap)"
        )
        raise InvalidParameterError(
            f"{trees_text} of {depth_text} may hold {nodes:,} nodes, more than the {MAX_FIT_NODES:,} a fit builds "
            "(about 0.5 GB of memory per million nodes, more on a grid of thousands of codes; nothing was charged): "
            "lower max_depth, max_depth_cap or n_trees"
        )

    def _resolved_sampler(self) -> str:
        """``"exact"`` without a seed, ``"numpy"`` with one (or when a research option needs it)."""
        options = self._paper_options()
        if options.sampler == "auto":
            return "exact" if self.random_state is None and options.variant == "pf" else "numpy"
        if options.sampler == "exact" and self.random_state is not None:
            raise ValueError(
                "sampler='exact' draws from the operating system and cannot be seeded; use random_state=None for "
                "a DP model, or sampler='auto' with the seed for a reproducible research run (NOT differentially "
                "private)"
            )
        if options.sampler == "exact" and options.variant != "pf":
            raise ValueError("sampler='exact' supports variant='pf' only")
        return options.sampler

    def _plan(self, params: TrainingParameters) -> BuildPlan:
        # the trees share what the DP row count left: epsilon - count_epsilon (sequential composition)
        tree_eps = params.tree_epsilon()
        n_layers = params.max_depth + 1
        layer_eps = params.layer_epsilons()
        monotone = params.exploit_monotonicity
        split_sens = _SPLIT_SENSITIVITY[params.relation]
        if params.sampler == "exact":
            split_mech = ExactPermuteAndFlip(int(UTILITY_SCALE * split_sens) + 1, monotone=monotone)
            leaf_mech = ExactPermuteAndFlip(1, monotone=monotone)
        elif params.variant == "pf":
            split_mech = PermuteAndFlip(split_sens, monotone=monotone)
            leaf_mech = PermuteAndFlip(1.0, monotone=monotone)
        else:
            split_mech = ExponentialMechanism(split_sens, monotone=monotone)
            leaf_mech = LaplaceMechanism(float(LEAF_COUNT_SENSITIVITY[params.relation]))
        return BuildPlan(
            split_mode=params.split_mode,
            n_layers=n_layers,
            tree_epsilon=tree_eps,
            layer_epsilons=tuple(float(e) for e in layer_eps),
            split_mechanism=split_mech,
            leaf_mechanism=leaf_mech,
            stop_when_pure=bool(self._paper_options().stop_when_pure),
            integer_utilities=params.sampler == "exact",
            leaf_counts=params.leaf == "counts",
            count_sensitivity=LEAF_COUNT_SENSITIVITY[params.relation],
            exact_counts=params.sampler == "exact",
        )

    def __getstate__(self) -> dict:
        refuse_unaccounted_pickling(self)  # n_jobs > 1 on processes would fit it outside the budget() block
        return pickled_state(self, super().__getstate__())  # a fitted one: marked when pickled inside a block

    def fit(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series) -> EDPRFClassifier:
        """Grow the forest.

        Parameters
        ----------
        X : DataFrame with the schema's feature columns, or 2-D array in schema order
        y : array-like of labels, each one of the schema's declared classes or an alias of one (read by the
            schema's label rules; :meth:`Schema.read_labels` gives the declared classes they read as, for
            scikit-learn's metrics and scorers, which compare labels as they are)

        Returns
        -------
        self

        Notes
        -----
        Privacy cost: ``epsilon`` per record under ``relation`` (see the
        class notes).  Calling ``fit`` again on the same data spends it again.
        """
        self._validate_params()  # every option, checked before any data is read
        refuse_bool_counts(self)
        refuse_bool_reals(self)
        schema = self._resolved_schema()
        sampler = self._resolved_sampler()
        self._parameters(1, 1)  # the options' combinations, checked before any data is read
        if self.residual_pass is True and (schema.n_classes != 2 or self.marginals_share in (0, 0.0)):
            self._residual_pass_on(schema, 0.0, None, epsilon_float(self.epsilon))  # refuses, before the charge
        self._refuse_oversized()  # public options: before the charge
        y = admit_fit(self, X, y, schema)  # layout, row cap, the charge, then the label values
        not_dp_inputs = inputs_not_dp(self)  # a data-fitted Pipeline step, a search's refit: warned, recorded
        if self._paper_options().stop_when_pure:
            warnings.warn(
                "stop_when_pure=True reproduces the paper's literal stopping rule: whether a node is a leaf "
                "reveals whether its rows share one class. The model is marked dp=False and must not be released.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        with fit_refusal_hint(LABEL_REFUSAL_HINT):
            labels = encode_labels(y, schema)
        warn_if_labels_read(y, labels, schema, type(self).__name__)  # aliases, text numbers: scorers differ
        master = make_generator(self.random_state)
        shape = self._shape(schema, labels.shape[0], master if sampler == "numpy" else None)
        grid = FeatureGrid.from_schema(schema, shape.n_bins)
        with fit_refusal_hint(feature_refusal_hint(X, schema)):
            codes = encode_features(X, schema, grid)
        warn_if_clipped(X, schema)
        if labels.shape[0] != codes.shape[0]:
            raise DataValidationError(f"X has {codes.shape[0]} rows but y has {labels.shape[0]}")
        params = self._parameters(
            shape.n_trees,
            shape.max_depth,
            shape.count_epsilon,
            shape.rule,
            shape.n_bins,
            shape.marginals_share,
            shape.marginals_bins,
            shape.chosen,
            not_dp_inputs,
        )
        marginals = None
        if params.marginals_share > 0:
            # parallel composition: a random, data-independent share of the rows goes to the marginals, the rest to
            # the trees; each part spends epsilon - count_epsilon on its own rows
            to_marginals = marginals_rows(codes.shape[0], params.marginals_share, master)
            marginals_grid = FeatureGrid.from_schema(schema, params.marginals_bins)
            same_grid = params.marginals_bins == params.n_bins  # the trees' codes serve: no second encoding
            part_codes = (codes if same_grid else encode_features(X, schema, marginals_grid))[to_marginals]
            # with a residual pass the histograms spend a share of the part's budget and the pass the rest, on the
            # same rows (sequential composition): the part still spends epsilon - count_epsilon
            histogram_eps = params.forest_epsilon * (RESIDUAL_HISTOGRAM_SHARE if shape.residual_pass else 1.0)
            marginals_rng = None if params.sampler == "exact" else master
            marginals = release_marginals(
                part_codes,
                labels[to_marginals],
                marginals_grid.n_codes,
                schema.n_classes,
                histogram_eps,
                relation=params.relation,
                rng=marginals_rng,
            )
            if shape.residual_pass:
                marginals = release_residual_pass(
                    part_codes,
                    labels[to_marginals],
                    marginals,
                    params.forest_epsilon - histogram_eps,
                    rng=marginals_rng,
                )
            codes, labels = codes[~to_marginals], labels[~to_marginals]
        composition = tree_composition(params.composition)
        assignment = composition.assign_rows(codes.shape[0], params.n_trees, master)
        if assignment.ndim == 1:
            order = np.argsort(assignment, kind="stable")
            sample_tree, sample_rows = assignment[order], order
        else:
            sample_tree, sample_rows = np.nonzero(assignment)
        trees = build_forest(
            codes,
            labels,
            grid,
            schema.n_classes,
            self._plan(params),
            sample_tree,
            sample_rows,
            spawn_generators(master, params.n_trees),
        )
        self.forest_ = DPForest(
            schema=schema,
            grid_bins=params.n_bins,
            split_mode=params.split_mode,
            trees=trees,
            parts=(("local", params, params.n_trees),),
            marginals=marginals,
        )
        self.classes_ = sorted_classes(schema.classes)  # scikit-learn's order (the model keeps the declared one)
        self.privacy_ = params
        self.dp_ = self.forest_.dp  # every reason: a research option, a seed, float noise, a drafted schema
        self.guarantee_ = self.forest_.guarantee()
        self.n_trees_ = params.n_trees
        self.max_depth_ = params.max_depth
        self.n_bins_ = params.n_bins
        self.n_rows_estimate_ = shape.estimate
        self.marginals_share_ = params.marginals_share
        self.marginals_bins_ = params.marginals_bins
        self.residual_pass_ = marginals is not None and marginals.residual_pass is not None
        return self

    @property
    def schema_(self) -> Schema:
        """The schema the model was fitted under, ``forest_.schema`` (as ``DPMarginalsClassifier.schema_`` and
        ``ReleasedForestClassifier.schema_``): ``clf.schema_.read_labels(y)`` for scikit-learn's metrics.  Absent
        (AttributeError) before ``fit``."""
        forest = getattr(self, "forest_", None)
        if forest is None:
            raise AttributeError("'EDPRFClassifier' object has no attribute 'schema_' (it is set by fit)")
        return forest.schema

    # -------------------------------------------------------------- predict
    def _fitted(self) -> DPForest:
        forest = getattr(self, "forest_", None)
        if forest is None:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this EDPRFClassifier is not fitted yet; call fit first")
        return forest

    def _checked(self, X: ArrayLike | pd.DataFrame) -> DPForest:
        """The fitted forest, once ``X`` passed scikit-learn's input checks; warns (pointing at the caller of the
        public method) when a column of ``X`` is mostly outside its declared bounds."""
        forest = self._fitted()
        check_predict_input(self, X, forest.schema)
        warn_if_clipped(X, forest.schema, stacklevel=4)
        return forest

    def _sorted_proba(self, forest: DPForest, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """``forest``'s probabilities of ``X``, columns in the order of ``classes_`` (``X`` already checked)."""
        with refused_cells_named():
            proba = forest.predict_proba(X)
        return in_classes_order(proba, self.classes_, forest.classes)

    def predict_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """Class probabilities, columns in the order of ``classes_`` (privacy cost: none).

        ``leaf="counts"``: the trees' smoothed leaf class distributions pooled
        log-linearly (:meth:`DPForest.predict_proba`, item 4 of
        :mod:`edprf_core._leaf_distribution`);
        ``leaf="label"``: the share of trees voting for each class.
        """
        forest = self._checked(X)
        return self._sorted_proba(forest, X)

    def predict_log_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """The natural logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0; privacy cost: none)."""
        forest = self._checked(X)
        return log_of(self._sorted_proba(forest, X))

    def predict(self, X: ArrayLike | pd.DataFrame) -> NDArray:
        """The most probable class (``leaf="label"``: the majority vote), ``classes_[argmax(predict_proba(X))]``:
        ties go to the class first in ``classes_`` (sorted, as scikit-learn; ``forest_.predict`` gives them to the
        class declared first).  Privacy cost: none."""
        forest = self._checked(X)  # refuses an unfitted estimator, warns for the caller
        return self.classes_[np.argmax(self._sorted_proba(forest, X), axis=1)]

    def score(
        self, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series, sample_weight: ArrayLike | None = None
    ) -> float:
        """Accuracy on ``(X, y)``; labels are read by the schema like in ``fit``.

        A label that is missing or not one of the declared classes raises
        :class:`DataValidationError` (it cannot be scored, and silently
        counting it as wrong would hide a unit or spelling mismatch).
        scikit-learn's ``accuracy_score`` and scorers compare raw labels with
        :meth:`predict`'s declared classes as they are: give them
        ``schema.read_labels(y)`` (:meth:`Schema.read_labels`).
        Privacy cost: none for the model; the score itself is an exact
        statistic of ``(X, y)`` and is not DP.
        """
        from ._released_classifier import schema_accuracy

        forest = self._checked(X)
        return schema_accuracy(forest.schema, lambda: self._sorted_proba(forest, X), y, sample_weight, self.classes_)

    def __sklearn_tags__(self):
        return training_tags(super().__sklearn_tags__(), self.schema, type(self).__name__, self.random_state)
