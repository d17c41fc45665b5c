"""The DP one-way marginals as a scikit-learn estimator (central: one data holder fits on its own rows).

:class:`DPMarginalsClassifier` releases the ``d`` per-feature (bin x class) histograms of all training rows
with discrete Laplace noise (:func:`edprf_core._marginals.release_marginals`) and predicts from them by
post-processing only (:func:`edprf_core._marginals.marginal_proba`).

Privacy argument of ``fit`` (kept next to the code)
---------------------------------------------------
- Before anything is read or drawn: the parameters and the input's layout are checked (types, shapes and
  column names only), too many rows are refused, and the whole ``epsilon`` is charged to the accountant
  (:func:`edprf_core._classifier.admit_fit`, the same path as :class:`~edprf_core.EDPRFClassifier`).
- Grid.  Bins, categories and classes come from the public schema; the number of bins of a continuous
  feature without declared edges is ``n_bins`` or the public rule :func:`~edprf_core._marginals.marginals_n_bins`
  of a row count that is either declared public (``n_rows_public``) or a DP count of the rows spending
  ``epsilon_c = count_epsilon_share * epsilon`` (:func:`edprf_core._classifier.fit_size`; L1 sensitivity 1).
- Histograms.  :func:`~edprf_core._marginals.release_marginals` at ``epsilon_h = epsilon - epsilon_c``:
  ``d`` histograms of the same rows, each ``epsilon_h / d``-DP.
- Composition.  The count and the ``d`` histograms run on the same rows: sequential composition gives
  ``epsilon_c + epsilon_h = epsilon`` per record under ``relation``, exactly what was charged.
- Randomness.  ``random_state=None``: OpenDP's exact samplers with operating-system randomness; a seed: the
  seeded numpy approximation (floating-point noise), and the guarantee says NOT differentially private.
- Prediction reads the release and the rows to score only: post-processing, no cost.

Not on the wire yet: a party cannot release this model (``protocol`` has no format for it) and it cannot be
exported or explained; those functions refuse it (:func:`edprf_core.forest.check_is_forest`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from ._accountant import BudgetAccountant, epsilon_float, pickled_state, refuse_unaccounted_pickling
from ._class_order import in_classes_order, sorted_classes
from ._classifier import (
    LABEL_REFUSAL_HINT,
    admit_fit,
    feature_refusal_hint,
    fit_refusal_hint,
    fit_size,
    resolved_schema,
    training_tags,
)
from ._domain_warning import warn_if_clipped
from ._encoding import FeatureGrid, encode_features, encode_labels
from ._exceptions import DataValidationError
from ._fit_context import inputs_not_dp
from ._forest import (
    DEPTH_RULES,
    DRAFTED_REASON,
    FLOAT_NOISE_REASON,
    PER_RECORD_NOTE,
    RELATIONS,
    SEEDED_REASON,
    release_guarantee,
    size_source,
)
from ._input_checks import check_predict_input, log_of, refused_cells_named, warn_if_labels_read
from ._marginals import NoisyMarginals, marginal_proba, marginals_n_bins, release_marginals
from ._randomness import RandomState, make_generator
from ._schema import Schema

__all__ = ["DPMarginalsClassifier", "MarginalsParameters"]

_GIVEN_BINS = (
    "given, assumed chosen without these rows, as every setting is (a choice made on them, by a search or by hand, "
    "spends privacy this guarantee does not count)"
)

SIZE_RULES = DEPTH_RULES
"""Where the number of bins came from: given, the rule on a declared row count, the rule on a DP count (the
values of the forest's ``depth_rule``)."""


@dataclass(frozen=True)
class MarginalsParameters:
    """The parameters the guarantee of a :class:`DPMarginalsClassifier` fit depends on.

    Attributes
    ----------
    epsilon : float in (0, inf)
        ε of every record of the training data for the whole fit (what the accountant was charged).
    relation : {"add-remove", "replace-one"}
    n_features : int >= 1
        ``d``, the number of histograms.
    n_bins : int >= 2
        Bins of continuous features without declared edges.
    count_epsilon : float in [0, epsilon)
        Part of ``epsilon`` spent on a DP row count (to choose the bins); the histograms share the rest.
    size_rule : {"fixed", "declared-size", "dp-count"}
        Where ``n_bins`` came from; ``"dp-count"`` exactly when ``count_epsilon > 0``.
    seeded : bool
        True when the noise came from a fixed seed (reproducible research, not DP).
    sampler : {"numpy", "exact"}
        The backend that drew the noise; ``"numpy"`` (floating point) makes the fit NOT differentially private.
    inputs_not_dp : tuple of str, default ()
        Why the fit's inputs were not DP (a data-fitted ``Pipeline`` step, a search's refit:
        :mod:`edprf_core._fit_context`); each is a reason of :meth:`not_dp_reasons`.
    """

    epsilon: float
    relation: str
    n_features: int
    n_bins: int
    count_epsilon: float = 0.0
    size_rule: str = "fixed"
    seeded: bool = False
    sampler: str = "exact"
    inputs_not_dp: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, Real) or not 0 < self.epsilon < math.inf:
            raise ValueError(f"epsilon: expected a positive finite number, got {self.epsilon!r}")
        for name, allowed in (("relation", RELATIONS), ("size_rule", SIZE_RULES), ("sampler", ("numpy", "exact"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: expected one of {allowed}, got {getattr(self, name)!r}")
        for name, low in (("n_features", 1), ("n_bins", 2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
                raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
        c = self.count_epsilon
        if isinstance(c, bool) or not isinstance(c, Real) or not 0 <= c < self.epsilon:
            raise ValueError(f"count_epsilon: expected a number in [0, epsilon = {self.epsilon!r}), got {c!r}")
        if (c > 0) != (self.size_rule == "dp-count"):
            raise ValueError(f"size_rule: expected 'dp-count' exactly when count_epsilon > 0, got {self.size_rule!r}")

    @property
    def histogram_epsilon(self) -> float:
        """ε the ``d`` histograms share: ``epsilon - count_epsilon`` (each gets that over ``d``)."""
        return self.epsilon - self.count_epsilon

    def not_dp_reasons(self) -> list[str]:
        """Why a fit with these parameters is not differentially private (empty when it is)."""
        reasons = ([SEEDED_REASON] if self.seeded else []) + ([FLOAT_NOISE_REASON] if self.sampler != "exact" else [])
        return reasons + list(self.inputs_not_dp)

    def configured(self) -> str:
        """What this configuration gives when every input is DP (one sentence without its final stop)."""
        bins = f"{self.n_bins} bins {size_source(self.size_rule, self.count_epsilon) or _GIVEN_BINS}"
        backend = "exact OpenDP sampler" if self.sampler == "exact" else "numpy floating-point sampler"
        return (
            f"epsilon = {self.epsilon:g} differential privacy per record under the {self.relation} neighbouring "
            f"relation (DP one-way marginals: {self.n_features} per-feature (bin x class) histograms sharing "
            f"epsilon = {self.histogram_epsilon:g} by sequential composition, {bins}; discrete Laplace noise drawn "
            f"by the {backend})"
        )


def _is_int(value: object, minimum: int) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool) and value >= minimum


def _is_real(value: object, low: float, high: float, *, high_closed: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        return False
    return low < value <= high if high_closed else low < value < high


_PARAMETER_RULES = {
    "schema": ("a Schema or a path to a schema TOML", lambda v: isinstance(v, (Schema, str, Path))),
    "epsilon": ("a finite number in (0, inf)", lambda v: _is_real(v, 0, math.inf, high_closed=False)),
    "n_bins": ("an integer >= 2 or 'auto'", lambda v: (isinstance(v, str) and v == "auto") or _is_int(v, 2)),
    "n_rows_public": ("an integer >= 1 or None", lambda v: v is None or _is_int(v, 1)),
    "count_epsilon_share": ("a number in (0, 0.5]", lambda v: _is_real(v, 0, 0.5, high_closed=True)),
    "relation": (f"one of {', '.join(RELATIONS)}", lambda v: isinstance(v, str) and v in RELATIONS),
    "random_state": (
        "None, an integer >= 0, a numpy Generator, SeedSequence or RandomState",
        lambda v: (
            v is None
            or _is_int(v, 0)
            or isinstance(v, (np.random.Generator, np.random.SeedSequence, np.random.RandomState))
        ),
    ),
    "accountant": ("a BudgetAccountant or None", lambda v: v is None or isinstance(v, BudgetAccountant)),
}
"""Each parameter: what it must be (for the error text) and the test."""


class DPMarginalsClassifier(ClassifierMixin, BaseEstimator):
    """Differentially private one-way marginals: a naive-Bayes-like classifier from noisy (bin x class) counts.

    ``fit`` releases, for every feature of the public ``schema``, the histogram of the training rows over
    (the feature's bin or category) x (class), each cell with discrete Laplace noise; ``predict_proba``
    combines the histograms' per-feature class evidence (shrunk toward the class totals where the counts are
    small against the noise).  One data holder's model (central): it has no wire format yet.

    Parameters
    ----------
    schema : Schema or path to a schema TOML
        The declared public schema: features, their domains and bins, and the classes.  Required.
    epsilon : float in (0, inf), default 1.0
        Privacy budget of the whole fit per record (the DP row count when one is drawn, and the histograms).
    n_bins : int >= 2 or "auto", default "auto"
        Equal-width bins of the declared bounds for continuous features that declare no edges.  ``"auto"``:
        the public rule :func:`edprf_core._marginals.marginals_n_bins`, 5 bins when
        ``n * epsilon_h / d < 300`` and 20 otherwise (``d`` features, ``epsilon_h`` the histograms' ε), where
        ``n`` is ``n_rows_public`` when given, else a DP count of the rows.
    n_rows_public : int >= 1 or None, default None
        A number of training rows that is public knowledge (declared, not measured on the private data), read
        by ``n_bins="auto"`` instead of a DP count.  A value equal to the exact number of training rows raises
        :class:`~edprf_core.PrivacyLeakWarning` (``len(X)`` is not public).
    count_epsilon_share : float in (0, 0.5], default 0.05
        Share of ``epsilon`` the DP row count spends when ``n_bins="auto"`` and ``n_rows_public`` is None
        (sequential composition: the histograms get the rest).
    relation : {"add-remove", "replace-one"}, default "add-remove"
        Neighbouring relation of the guarantee.  A histogram's L1 sensitivity is 1 under add-remove and 2
        under replace-one; the row count's is 1 (0 under replace-one).
    random_state : None, int >= 0, numpy Generator or SeedSequence, default None
        ``None`` draws every release exactly with OpenDP from operating-system randomness (the production
        setting).  A seed switches to the seeded numpy sampler (reproducible tests and research); the
        guarantee then says NOT differentially private (anyone who knows the seed can remove the noise).
    accountant : BudgetAccountant or None, default None
        Charged ``epsilon`` at the start of every ``fit``, before anything is drawn; a fit that would exceed
        its cap raises :class:`~edprf_core.BudgetExceededError`.  ``None`` charges the process default
        (:func:`edprf_core.budget`) when one is set.  Clones share it.

    Attributes
    ----------
    marginals_ : NoisyMarginals
        The release: one noisy (code x class) histogram per feature, with its ε (the histograms' share),
        relation and class count.
    classes_ : ndarray
        The declared classes, sorted (scikit-learn's order): the columns of :meth:`predict_proba` (``marginals_``
        keeps the declared order).
    n_features_in_ : int
        The schema's feature count.
    feature_names_in_ : ndarray of str
        The schema's feature names, in model order, after a ``fit`` on a DataFrame (absent after fitting on an
        array).  A DataFrame is matched by column name, in any order, its ignored columns dropped by rule.
    schema_ : Schema
        The schema the model was fitted under (prediction reads rows by it alone).
    n_bins_ : int
        Bins used (``n_bins`` or the automatic rule's choice).
    n_rows_estimate_ : int or None
        The DP row count the bins rule read (noisy; may be negative), or None when none was drawn.
    privacy_ : MarginalsParameters
        ε, relation, the row count's share, how the bins were chosen, the sampler and whether it was seeded.
    dp_ : bool
        Whether the model is differentially private: False when a research seed (``random_state``, which also
        means floating-point noise), a drafted schema, a ``Pipeline`` step fitted on the same rows or a search's
        refit breaks the guarantee, as :attr:`EDPRFClassifier.dp_`; ``guarantee_`` gives the reasons.
    guarantee_ : str
        The privacy statement, computed from ``privacy_`` (the ε charged) and the schema; it says NOT
        differentially private, with the reasons, whenever the estimator can tell that an input was not DP (a
        research seed, floating-point noise, a schema marked drafted, a data-fitted ``Pipeline`` step, a search's
        refit).  It cannot tell a schema or settings derived from these rows by other means: the statement
        assumes them public knowledge.

    Notes
    -----
    Privacy cost of ``fit``: ``epsilon`` per record under ``relation``.  When ``n_bins="auto"`` and
    ``n_rows_public`` is None, a DP count of the rows spends ``count_epsilon_share * epsilon`` first; the
    ``d`` histograms share the rest, ``(epsilon - count_epsilon_share * epsilon) / d`` each (sequential composition over
    the count and the histograms of the same rows).  Calling ``fit`` again spends ``epsilon`` again.
    ``predict_proba``, ``predict`` and ``score`` cost nothing (post-processing of the release; ``score`` is an
    exact, non-DP statistic of the rows it is given).

    The model is not on the wire: a party cannot release it, and :func:`protocol.encode_release`, the ONNX
    export and the explanations refuse it.
    """

    def __init__(
        self,
        schema: Schema | str | Path | None = None,
        *,
        epsilon: float = 1.0,
        n_bins: int | str = "auto",
        n_rows_public: int | None = None,
        count_epsilon_share: float = 0.05,
        relation: str = "add-remove",
        random_state: RandomState = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        self.schema = schema
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.n_rows_public = n_rows_public
        self.count_epsilon_share = count_epsilon_share
        self.relation = relation
        self.random_state = random_state
        self.accountant = accountant

    # ------------------------------------------------------------------ fit
    def _check_parameters(self) -> None:
        """Every parameter against its rule, before any data is read ("expected X, got Y")."""
        if self.schema is None:
            resolved_schema(None, type(self).__name__)  # the error that says how to get a schema
        for name, (expected, ok) in _PARAMETER_RULES.items():
            value = getattr(self, name)
            if not ok(value):
                raise InvalidParameterError(f"{type(self).__name__}: {name}: expected {expected}, got {value!r}")

    def _bins(self, schema: Schema, n_rows: int, rng: np.random.Generator | None) -> tuple[int, float, str, int | None]:
        """Bins, ε of the row count, size rule, DP row count (None when none was drawn).

        Privacy cost: ``count_epsilon_share * epsilon`` when ``n_bins="auto"`` and ``n_rows_public`` is None
        (:func:`edprf_core._classifier.fit_size`); nothing otherwise.
        """
        if self.n_bins != "auto":
            return int(self.n_bins), 0.0, "fixed", None
        counted = fit_size(self.n_rows_public, self.count_epsilon_share, epsilon_float(self.epsilon), n_rows, rng)
        histogram_eps = epsilon_float(self.epsilon) - counted.count_epsilon
        n_bins = marginals_n_bins(counted.size, schema.n_features, histogram_eps)
        return n_bins, counted.count_epsilon, counted.rule, counted.estimate

    def __getstate__(self) -> dict:
        refuse_unaccounted_pickling(self)  # n_jobs > 1 on processes would fit it outside the budget() block
        return pickled_state(self, super().__getstate__())  # a fitted one: marked when pickled inside a block

    def fit(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series) -> DPMarginalsClassifier:
        """Release the DP one-way marginals of ``(X, y)`` and return ``self``.

        ``X`` is a DataFrame holding the schema's feature columns (matched by name) or a 2-D array in the
        schema's feature order; ``y`` holds one declared class per row.  Every cell is read by the schema
        alone.

        Privacy cost: ``epsilon`` in (0, inf) per record under ``relation``, charged before anything is
        drawn: the DP row count (``count_epsilon_share * epsilon``, only for ``n_bins="auto"`` without
        ``n_rows_public``) and the ``d`` histograms (the rest), sequential composition.
        """
        self._check_parameters()
        schema = resolved_schema(self.schema, type(self).__name__)
        y = admit_fit(self, X, y, schema)  # layout, row cap, the charge, then the label values
        not_dp_inputs = inputs_not_dp(self)  # a data-fitted Pipeline step, a search's refit: warned, recorded
        with fit_refusal_hint(LABEL_REFUSAL_HINT):
            labels = encode_labels(y, schema)
        warn_if_labels_read(y, labels, schema, type(self).__name__)  # aliases, text numbers: scorers differ
        rng = None if self.random_state is None else make_generator(self.random_state)  # None: exact OpenDP
        n_bins, count_eps, rule, estimate = self._bins(schema, labels.shape[0], rng)
        grid = FeatureGrid.from_schema(schema, n_bins)
        with fit_refusal_hint(feature_refusal_hint(X, schema)):
            codes = encode_features(X, schema, grid)
        warn_if_clipped(X, schema)
        if labels.shape[0] != codes.shape[0]:
            raise DataValidationError(f"X has {codes.shape[0]} rows but y has {labels.shape[0]}")
        params = MarginalsParameters(
            epsilon=epsilon_float(self.epsilon),
            relation=self.relation,
            n_features=schema.n_features,
            n_bins=n_bins,
            count_epsilon=count_eps,
            size_rule=rule,
            seeded=rng is not None,
            sampler="exact" if rng is None else "numpy",
            inputs_not_dp=not_dp_inputs,
        )
        self.marginals_: NoisyMarginals = release_marginals(
            codes, labels, grid.n_codes, schema.n_classes, params.histogram_epsilon, relation=self.relation, rng=rng
        )
        reasons = ([DRAFTED_REASON] if schema.is_draft else []) + params.not_dp_reasons()
        self.schema_ = schema
        self.classes_ = sorted_classes(schema.classes)  # scikit-learn's order (the release keeps the declared one)
        self.n_bins_ = n_bins
        self.n_rows_estimate_ = estimate
        self.privacy_ = params
        self.dp_ = not reasons  # as EDPRFClassifier.dp_: a seed or a drafted schema makes it False
        self.guarantee_ = release_guarantee(reasons, params.configured(), epsilon=params.epsilon, note=PER_RECORD_NOTE)
        return self

    # -------------------------------------------------------------- predict
    def _codes(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.int32]:
        """``X``'s codes, once it passed scikit-learn's input checks; warns (pointing at the caller of the public
        method) when a column of ``X`` is mostly outside its declared bounds."""
        check_is_fitted(self, "marginals_")
        check_predict_input(self, X, self.schema_)
        with refused_cells_named():
            codes = encode_features(X, self.schema_, FeatureGrid.from_schema(self.schema_, self.n_bins_))
        warn_if_clipped(X, self.schema_, stacklevel=4)
        return codes

    def _sorted_proba(self, codes: NDArray[np.int32]) -> NDArray[np.float64]:
        """The release's probabilities of ``codes``, columns in the order of ``classes_``."""
        return in_classes_order(marginal_proba(self.marginals_, codes), self.classes_, self.schema_.classes)

    def predict_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """Class probabilities, columns in the order of ``classes_``; rows read by the schema alone.

        :func:`edprf_core._marginals.marginal_proba` of ``marginals_``.  Privacy cost: none
        (post-processing of the release, which spent ``epsilon`` in (0, inf) once in ``fit``).
        """
        codes = self._codes(X)  # refuses an unfitted estimator first
        return self._sorted_proba(codes)

    def predict_log_proba(self, X: ArrayLike | pd.DataFrame) -> NDArray[np.float64]:
        """The natural logarithm of :meth:`predict_proba` (``-inf`` where a probability is 0; privacy cost: none)."""
        codes = self._codes(X)
        return log_of(self._sorted_proba(codes))

    def predict(self, X: ArrayLike | pd.DataFrame) -> NDArray:
        """The most probable class, ``classes_[argmax(predict_proba(X))]``: ties go to the class first in
        ``classes_`` (sorted).  Privacy cost: none."""
        codes = self._codes(X)  # refuses an unfitted estimator, warns for the caller
        return self.classes_[np.argmax(self._sorted_proba(codes), axis=1)]

    def score(
        self, X: ArrayLike | pd.DataFrame, y: ArrayLike | pd.Series, sample_weight: ArrayLike | None = None
    ) -> float:
        """Accuracy on ``(X, y)``; labels are read by the schema like in ``fit``.

        A label that is missing or not one of the declared classes raises :class:`DataValidationError`.
        Privacy cost: none for the model; the score is an exact statistic of ``(X, y)`` and is not DP.
        """
        from ._released_classifier import schema_accuracy

        codes = self._codes(X)
        return schema_accuracy(self.schema_, lambda: self._sorted_proba(codes), y, sample_weight, self.classes_)

    def __sklearn_tags__(self):
        return training_tags(super().__sklearn_tags__(), self.schema, type(self).__name__, self.random_state)
