"""A recorder of every DP mechanism call, at our API and at OpenDP's, and the ε one record can face.

Two levels are recorded while a fit or a party request runs:

1. our mechanism API: :meth:`edprf_core._exact_selection.ExactPermuteAndFlip.select`,
   ``discrete_laplace_counts`` as bound in every module of the project (each module's
   own binding is wrapped, so a module that rebinds the name is still recorded), and the
   research samplers (``PermuteAndFlip.select``, ``ExponentialMechanism.select``,
   ``LaplaceMechanism.randomise``: never allowed on the production path).  Each call
   keeps the ε of every selection row (or of the count vector), the sensitivity the code
   declared, its input values, its output and the module that called it.
2. OpenDP: every ``make_*`` constructor of :mod:`opendp.measurements` (the ``then_*``
   partial constructors call them), with the scale, metric, domain and output measure it
   was built with, and every invocation of a measurement, with its input and its result,
   attached to the level-1 call that is running.  Invocations are recorded at OpenDP's C
   entry point ``opendp_core__measurement_invoke`` (the function object of OpenDP's library
   handle), which OpenDP's Python ``measurement_invoke`` and the project's direct call
   (``edprf_core._opendp_entry``) both go through.

A call made while another is running (one entry point calling another) is part of the
outer call: the caller's declared ε and shape are recorded, with every draw made inside.

:func:`charged_epsilon_of_fit` and :func:`charged_epsilon_of_evaluation` then check the
record against the math, which the caller states through :class:`TrueSensitivity`
(never through what the code declared): each level-1 call must draw exact noise whose
real scale gives at most the call's ε for the TRUE sensitivity, hand OpenDP exactly its
input and return exactly what OpenDP drew, and the calls must be,
in order, the DP row count (only when the depth rule is ``dp-count``), then per layer
one leaf call with one row per released leaf of that layer and one split call with one
row per released split node of that layer, and nothing else.  The ε one record can face
is rebuilt from the real scales: the row count + the costliest root-to-leaf path
(+ the evaluation, which the ledger adds), and EVERY root-to-leaf path must spend exactly
its tree's ε, each split its layer's share and each leaf the rest of its path's budget
(:func:`check_path_budgets`).  Every released tree must also have a data-independent shape
(:func:`check_tree_shapes`: a leaf only at the last layer or where its path has no split
candidate left, never because its node was empty or pure).  :func:`check_released_values` checks that
every released split, label and leaf count is post-processing of what its call output,
and :func:`check_mechanism_inputs` that the calls saw the data at its true size.  Any
mismatch raises :class:`AccountingError`.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import opendp._lib
import opendp.measurements
import pytest
from opendp._convert import c_to_py
from opendp._lib import AnyObject

import edprf_core._count_noise as count_noise
from edprf_core import DPForest
from edprf_core._builder import _Candidates
from edprf_core._exact_selection import UTILITY_SCALE, ExactPermuteAndFlip
from edprf_core._marginals import RELEASE_RANGE, NoisyMarginals
from edprf_core._mechanisms import ExponentialMechanism, LaplaceMechanism
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import MAX_LEAF_COUNT
from edprf_core.mechanisms import PermuteAndFlip

__all__ = [
    "ADD_REMOVE",
    "AccountingError",
    "MechanismCall",
    "OpenDPDraw",
    "Recorder",
    "TrueSensitivity",
    "account_fit",
    "account_marginals",
    "account_mixed_fit",
    "charged_epsilon_of_evaluation",
    "charged_epsilon_of_fit",
    "check_mechanism_inputs",
    "check_path_budgets",
    "check_released_values",
    "check_tree_shapes",
]

_PROJECT_PACKAGES = ("edprf_core", "client", "server", "protocol", "edprf_fl")
_RELATIVE_SLACK = 1e-12
"""Real ε may exceed the declared ε by float rounding only (the code inflates scales by 1e-12)."""


class AccountingError(AssertionError):
    """The recorded mechanism calls do not add up to what was charged or printed."""


@dataclass(frozen=True)
class TrueSensitivity:
    """Sensitivities from the math, per neighbouring relation (not from the code under test).

    Split utilities are ``floor(K (N^2 - S) / N)`` per child, ``K = 2**16``: under add-remove
    ``g = N - S/N`` moves by less than 2, so the integer utility by at most ``2K + 1`` and in
    one direction (monotone); replace-one is a removal and an addition (``4K + 1``, not
    monotone).  Class counts move by 1 (a leaf label's utility: monotone under add-remove;
    the count vector's L1 norm: 1, 2 under replace-one).  The DP row count moves by 1 under
    add-remove.  An evaluation's ``(correct, total)`` moves by at most 2 in L1.
    """

    relation: str = "add-remove"

    @property
    def monotone(self) -> bool:
        return self.relation == "add-remove"

    @property
    def split(self) -> int:
        return (2 if self.monotone else 4) * UTILITY_SCALE + 1

    @property
    def leaf_label(self) -> int:
        return 1

    @property
    def leaf_counts(self) -> int:
        return 1 if self.monotone else 2

    row_count: int = 1
    evaluation: int = 2


ADD_REMOVE = TrueSensitivity()
"""The production relation's sensitivities."""


@dataclass
class OpenDPDraw:
    """One invocation of an OpenDP measurement."""

    constructor: str
    scale: float
    metric: str
    domain: str
    measure: str
    n_values: int
    arg: object = None
    result: object = None

    def epsilon(self, sensitivity: int, monotone: bool) -> float:
        """The ε this draw really costs for a query of the given TRUE sensitivity (pure DP)."""
        if "MaxDivergence" not in self.measure:
            raise AccountingError(f"{self.constructor} drew under {self.measure}, not pure DP (MaxDivergence)")
        if "i64" not in self.domain and "i32" not in self.domain:
            raise AccountingError(f"{self.constructor} drew on {self.domain}, not an integer domain")
        if not self.scale > 0:
            raise AccountingError(f"{self.constructor} drew with scale {self.scale!r}: no noise")
        if self.constructor == "make_noisy_max":
            return (1 if monotone else 2) * sensitivity / self.scale
        if self.constructor == "make_laplace":
            return sensitivity / self.scale
        raise AccountingError(f"an unrecognised OpenDP mechanism {self.constructor} was invoked")


@dataclass
class MechanismCall:
    """One call of our mechanism API and the OpenDP draws made inside it."""

    api: str
    site: str
    epsilons: np.ndarray
    declared_sensitivity: float
    shape: tuple[int, ...]
    n_valid: np.ndarray | None = None
    draws: list[OpenDPDraw] = field(default_factory=list)
    output: np.ndarray | None = None
    values: np.ndarray | None = None
    valid: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return self.shape[0] if self.shape else 1

    def real_epsilons(self, sensitivity: int, monotone: bool) -> np.ndarray:
        """Real ε of each row (a selection), or of the whole vector (a count call: one entry).

        Also checks that OpenDP received exactly the call's values (the valid candidates'
        utilities, or the counts) and that the call returned exactly what OpenDP drew.
        """
        if self.api.startswith("research:"):
            raise AccountingError(f"the research sampler {self.api[9:]} ran on the production path ({self.site})")
        if self.api == "select":
            rows = np.flatnonzero(self.n_valid > 0)
            if len(self.draws) != rows.size:
                raise AccountingError(
                    f"a selection of {rows.size} rows made {len(self.draws)} exact draws ({self.site})"
                )
            real = np.zeros(self.n_rows)
            for i, draw in zip(rows, self.draws):
                if draw.constructor != "make_noisy_max" or draw.n_values != self.n_valid[i]:
                    raise AccountingError(
                        f"selection row {i} drew {draw.constructor} on {draw.n_values} values, "
                        f"expected make_noisy_max on {self.n_valid[i]} candidates"
                    )
                real[i] = draw.epsilon(sensitivity, monotone)
                index = np.flatnonzero(self.valid[i])
                if draw.arg != self.values[i, index].astype(np.int64).tolist() or self.output[i] != index[draw.result]:
                    raise AccountingError(
                        f"selection row {i} ({self.site}): OpenDP saw other utilities or chose "
                        "another candidate than the call returned"
                    )
        else:
            n = int(np.prod(self.shape))
            drawn = sum(d.n_values for d in self.draws)
            if n and drawn != n:
                raise AccountingError(f"a count release of {n} values drew exact noise on {drawn} ({self.site})")
            # a record may move every coordinate: the draws compose (one draw in the code under test)
            real = np.array([math.fsum(d.epsilon(sensitivity, True) for d in self.draws)])
            given = [v for d in self.draws for v in d.arg]
            drawn_out = [v for d in self.draws for v in d.result]
            if n and (
                given != self.values.astype(np.int64).ravel().tolist()
                or drawn_out != np.asarray(self.output).ravel().tolist()
            ):
                raise AccountingError(
                    f"a count release ({self.site}): OpenDP saw other counts or the call returned "
                    "other values than OpenDP drew"
                )
        declared = self.epsilons if self.api == "select" else self.epsilons[:1]
        over = real > declared * (1 + _RELATIVE_SLACK)
        if np.any(over):
            i = int(np.flatnonzero(over)[0])
            raise AccountingError(
                f"{self.api} at {self.site}: the noise drawn costs epsilon {real[i]!r} for the "
                f"true sensitivity {sensitivity}, more than the {declared[i]!r} it declared"
            )
        return real


class Recorder:
    """Records every mechanism call (both levels) while installed; see the module docstring."""

    def __init__(self) -> None:
        self.calls: list[MechanismCall] = []
        self.orphan_draws: list[OpenDPDraw] = []
        self._open: list[MechanismCall] = []
        self._built: dict[int, tuple[object, dict]] = {}

    # ------------------------------------------------------------ level 1
    @contextmanager
    def _calling(self, call: MechanismCall) -> Iterator[None]:
        """Record ``call`` unless another is running: a nested call is part of the outer one (its draws too)."""
        if self._open:
            yield
            return
        self.calls.append(call)
        self._open.append(call)
        try:
            yield
        finally:
            self._open.pop()

    def _wrap_counts(self, real):
        def discrete_laplace_counts(counts, epsilon, sensitivity=1, rng=None):
            values = np.asarray(counts)
            eps = np.full(max(1, values.size), float(epsilon))
            call = MechanismCall(
                "discrete_laplace_counts" if rng is None else "research:discrete_laplace_counts",
                sys._getframe(1).f_globals.get("__name__", "?"),
                eps,
                sensitivity,
                values.shape,
                values=values.copy(),
            )
            with self._calling(call):
                call.output = np.array(real(counts, epsilon, sensitivity, rng))
            return call.output.copy()

        return discrete_laplace_counts

    def _wrap_select(self, real, api: str):
        recorder = self

        def select(mech, utilities, epsilon, rng=None, valid=None):
            u = np.asarray(utilities)
            ok = np.ones(u.shape, bool) if valid is None else np.broadcast_to(np.asarray(valid, bool), u.shape)
            eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), u.shape[:1]).copy()
            call = MechanismCall(
                api,
                sys._getframe(1).f_globals.get("__name__", "?"),
                eps,
                float(getattr(mech, "sensitivity", math.nan)),
                u.shape,
                ok.sum(axis=1),
                values=u.copy(),
                valid=ok.copy(),
            )
            with recorder._calling(call):
                call.output = np.array(real(mech, utilities, epsilon, rng, valid))
            return call.output.copy()

        return select

    def _wrap_randomise(self, real):
        recorder = self

        def randomise(mech, values, epsilon, rng):
            v = np.asarray(values)
            eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), v.shape[:1]).copy()
            call = MechanismCall(
                "research:LaplaceMechanism.randomise",
                sys._getframe(1).f_globals.get("__name__", "?"),
                eps,
                float(mech.sensitivity),
                v.shape,
            )
            with recorder._calling(call):
                call.output = np.array(real(mech, values, epsilon, rng))
            return call.output.copy()

        return randomise

    # ------------------------------------------------------------ level 2
    def _wrap_constructor(self, name: str, real):
        signature = inspect.signature(real)  # follows __wrapped__: a second recorder sees the real parameters

        @functools.wraps(real)
        def constructor(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            meas = real(*args, **kwargs)
            a = bound.arguments
            info = {
                "constructor": name,
                "scale": float(a.get("scale", math.nan)),
                "metric": str(a.get("input_metric")),
                "domain": str(a.get("input_domain")),
                "measure": str(a.get("output_measure", a.get("MO", "?"))),
            }
            self._built[id(meas)] = (meas, info)  # the reference keeps the id unique
            return meas

        return constructor

    def _wrap_invoke(self, real):
        """OpenDP's C entry point ``opendp_core__measurement_invoke``, which every invocation passes through.

        OpenDP's Python ``measurement_invoke`` calls it, and so does the project's direct call
        (``edprf_core._opendp_entry``): recording here sees every draw whichever Python path made
        it.  The argument and the release are read back as copies (``c_to_py`` on a plain pointer,
        which frees nothing); the ``FfiResult`` goes back to the caller untouched.
        """
        object_pointer = ctypes.POINTER(AnyObject)

        def as_python(pointer: object) -> object:
            value = c_to_py(ctypes.cast(pointer, object_pointer))
            return np.asarray(value).tolist() if isinstance(value, np.ndarray) else value

        def entry(measurement, arg):
            built = self._built.get(id(measurement))
            info = (
                built[1]
                if built is not None and built[0] is measurement
                else {
                    "constructor": "<built before recording>",
                    "scale": math.nan,
                    "metric": "?",
                    "domain": "?",
                    "measure": "?",
                }
            )
            given = as_python(arg)  # as Python values: the same whether the caller passed a list or an array
            draw = OpenDPDraw(n_values=len(given) if hasattr(given, "__len__") else 1, arg=given, **info)
            (self._open[-1].draws if self._open else self.orphan_draws).append(draw)
            real.argtypes, real.restype = entry.argtypes, entry.restype  # what the caller declared
            result = real(measurement, arg)
            if result.tag == 0:
                draw.result = as_python(result.payload.Ok)
            return result

        entry.argtypes, entry.restype = real.argtypes, real.restype
        return entry

    # ------------------------------------------------------------ install
    def install(self, monkeypatch: pytest.MonkeyPatch) -> Recorder:
        """Patch both levels (undone by ``monkeypatch`` at the end of the test)."""
        # each module's own binding is wrapped, whatever it is (a module could rebind the name to its own code)
        modules = {count_noise.__name__: count_noise, **sys.modules}
        for name, module in list(modules.items()):
            if name.split(".")[0] in _PROJECT_PACKAGES and hasattr(module, "discrete_laplace_counts"):
                monkeypatch.setattr(
                    module, "discrete_laplace_counts", self._wrap_counts(module.discrete_laplace_counts)
                )
        monkeypatch.setattr(ExactPermuteAndFlip, "select", self._wrap_select(ExactPermuteAndFlip.select, "select"))
        for cls in (PermuteAndFlip, ExponentialMechanism):
            monkeypatch.setattr(cls, "select", self._wrap_select(cls.select, f"research:{cls.__name__}.select"))
        monkeypatch.setattr(LaplaceMechanism, "randomise", self._wrap_randomise(LaplaceMechanism.randomise))
        for name in dir(opendp.measurements):
            if name.startswith("make_") and callable(getattr(opendp.measurements, name)):
                monkeypatch.setattr(
                    opendp.measurements, name, self._wrap_constructor(name, getattr(opendp.measurements, name))
                )
        entry = opendp._lib.lib.opendp_core__measurement_invoke  # the C entry point (see _wrap_invoke)
        monkeypatch.setattr(opendp._lib.lib, "opendp_core__measurement_invoke", self._wrap_invoke(entry))
        return self

    def take(self) -> list[MechanismCall]:
        """The calls recorded since the last ``take`` (one request's), checking no draw ran outside a call."""
        if self.orphan_draws:
            raise AccountingError(
                f"{len(self.orphan_draws)} OpenDP draws ran outside the mechanism API: {self.orphan_draws[0]}"
            )
        calls, self.calls = self.calls, []
        return calls


# ---------------------------------------------------------------- checkers
def _is_count_call(call: MechanismCall) -> bool:
    return call.api.endswith("discrete_laplace_counts")


@dataclass(frozen=True)
class _Layer:
    """One mechanism call of a fit matched to the released nodes it decided."""

    nodes: np.ndarray
    call: MechanismCall
    kind: str  # "leaf-counts", "leaf-label" or "split"


def _match_fit(calls: list[MechanismCall], forest: DPForest) -> tuple[MechanismCall | None, list[_Layer]]:
    """The DP row count (or None) and each layer's calls, matched in order against the released trees.

    The calls must be, in order: the DP row count (one value) exactly when the part's depth
    rule is ``dp-count``; then for each layer ``k`` holding leaves, one leaf call with one
    row per leaf at depth ``k - 1`` (class counts, or a label selection), and for each layer
    holding split nodes, one split selection with one row per such node; nothing else.
    """
    if len(forest.parts) != 1:
        raise ValueError(f"expected one fit's forest, got {len(forest.parts)} parts")
    params = forest.parts[0][1]
    queue = list(calls)
    count = None
    if params.depth_rule == "dp-count":
        if not queue or not _is_count_call(queue[0]) or int(np.prod(queue[0].shape)) != 1:
            raise AccountingError("the depth came from a DP row count but the first call is not a one-value count")
        count = queue.pop(0)
    trees = forest.trees
    depth, _ = trees.depths_and_parents()
    is_leaf = trees.feature < 0
    layers = []
    for d in range(int(depth.max(initial=0)) + 1):
        for want_leaf in (True, False):
            nodes = np.flatnonzero((depth == d) & (is_leaf == want_leaf))
            if nodes.size == 0:
                continue
            kind = ("leaf-counts" if params.leaf == "counts" else "leaf-label") if want_leaf else "split"
            if not queue:
                raise AccountingError(f"no mechanism call for the {nodes.size} {kind} nodes of layer {d + 1}")
            call = queue.pop(0)
            if kind == "leaf-counts":
                ok = _is_count_call(call) and call.shape == (nodes.size, forest.schema.n_classes)
            else:
                ok = not _is_count_call(call) and call.n_rows == nodes.size
            if not ok:
                raise AccountingError(
                    f"layer {d + 1} released {nodes.size} {kind} nodes but the next call is "
                    f"{call.api} of shape {call.shape} from {call.site}"
                )
            layers.append(_Layer(nodes, call, kind))
    if queue:
        raise AccountingError(
            f"{len(queue)} mechanism calls beyond the released trees, first {queue[0].api} "
            f"of shape {queue[0].shape} from {queue[0].site}"
        )
    return count, layers


def check_tree_shapes(forest: DPForest) -> None:
    """Every tree of a DP fit has a shape that depends on the data only through its split choices.

    The builder's rule (the module docstring of :mod:`edprf_core._builder`; the encoder and the
    decoder enforce it too, :mod:`protocol._structure`), recomputed here from the released trees
    and the public grid alone: a node is a leaf exactly when it is at the last layer (depth
    ``max_depth``) or its path has left no split candidate, that is no feature of which the path
    still admits two codes or more; every split node divides the codes its path admits on its
    feature in two non-empty parts (binary: a continuous threshold sends codes below it left, a
    category sends its own code left; multiway: one child per code).  An empty or a pure node
    above the last layer with a candidate left must split like any other: a leaf there tells
    the outside that no row, or rows of one class only, reached it.  A release that says
    ``dp = false`` (research, ``stop_when_pure``) is not checked: it says it is NOT DP.
    """
    params = forest.parts[0][1]
    if not params.dp:
        return
    trees = forest.trees
    grid = FeatureGrid.from_schema(forest.schema, forest.grid_bins)
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    is_cat = np.asarray(grid.is_categorical, dtype=bool)
    starts = np.concatenate([[0], np.cumsum(n_codes)]).astype(np.int64)
    bin_feature = np.repeat(np.arange(n_codes.size), n_codes)
    bin_code = np.arange(int(starts[-1])) - starts[bin_feature]
    depth, parent = trees.depths_and_parents()
    feature, split = trees.feature.astype(np.int64), trees.split.astype(np.int64)
    tree_of = trees.tree_of_node()
    binary = forest.split_mode == "binary"
    # the codes each node's path admits, layer by layer from the roots (which admit every code)
    admitted = np.ones((trees.n_nodes, bin_feature.size), dtype=bool)
    for d in range(1, int(depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(depth == d)
        up = parent[nodes]
        side = nodes - (trees.tree_offsets[tree_of[up]] + trees.first_child[up].astype(np.int64))
        f, s = feature[up][:, None], split[up][:, None]
        if binary:
            left = np.where(is_cat[feature[up]][:, None], bin_code[None, :] == s, bin_code[None, :] < s)
            goes = np.where(side[:, None] == 0, left, ~left)
        else:
            goes = bin_code[None, :] == side[:, None]
        admitted[nodes] = admitted[up] & ((bin_feature[None, :] != f) | goes)
    per_feature = np.add.reduceat(admitted, starts[:-1], axis=1) if trees.n_nodes else np.zeros((0, n_codes.size))
    open_features = (per_feature >= 2).sum(axis=1)

    def name(i: int) -> str:
        t = int(tree_of[i])
        return f"tree {t}, node {i - int(trees.tree_offsets[t])} (depth {int(depth[i])} of {params.max_depth})"

    too_deep = np.flatnonzero(depth > params.max_depth)
    if too_deep.size:
        raise AccountingError(f"{name(int(too_deep[0]))}: a node below the last layer")
    is_leaf = feature < 0
    early = np.flatnonzero(is_leaf & (depth < params.max_depth) & (open_features > 0))
    if early.size:
        i = int(early[0])
        raise AccountingError(
            f"{name(i)}: a leaf above the last layer with {int(open_features[i])} feature(s) its path can still "
            "split: the tree's shape depends on the data (an empty or pure node stopped)"
        )
    splits = np.flatnonzero(~is_leaf)
    late = splits[depth[splits] >= params.max_depth]
    if late.size:
        raise AccountingError(f"{name(int(late[0]))}: a split at the last layer")
    closed = per_feature[splits, feature[splits]] < 2
    if np.any(closed):
        raise AccountingError(
            f"{name(int(splits[np.flatnonzero(closed)[0]]))}: a split on a feature its path has closed"
        )
    if binary and splits.size:
        first = trees.tree_offsets[tree_of[splits]] + trees.first_child[splits].astype(np.int64)
        in_children = [per_feature[first + j, feature[splits]] for j in (0, 1)]
        empty = (in_children[0] < 1) | (in_children[1] < 1)
        if np.any(empty):
            i = int(splits[np.flatnonzero(empty)[0]])
            raise AccountingError(f"{name(i)}: a split that leaves one child no code of its feature (not a candidate)")


def charged_epsilon_of_fit(
    calls: list[MechanismCall], forest: DPForest, truth: TrueSensitivity = ADD_REMOVE
) -> tuple[float, float]:
    """``(row-count ε, ε of the whole fit for one record)`` rebuilt from the real noise of ``calls``.

    ``forest`` is what was released (one part: one fit); the calls are matched to it as
    :func:`_match_fit` says.  Rows of one call are disjoint nodes (parallel composition); a
    record meets one node per layer on its path; trees compose as the part says.  Raises
    :class:`AccountingError` on any extra, missing or mis-sized call, on noise cheaper
    than declared, or on a tree whose shape depends on the data (:func:`check_tree_shapes`).
    """
    check_tree_shapes(forest)
    count, layers = _match_fit(calls, forest)
    count_eps = 0.0 if count is None else float(count.real_epsilons(truth.row_count, True)[0])
    trees = forest.trees
    depth, parent = trees.depths_and_parents()
    is_leaf = trees.feature < 0
    node_eps = np.full(trees.n_nodes, np.nan)
    sensitivity = {"leaf-counts": truth.leaf_counts, "leaf-label": truth.leaf_label, "split": truth.split}
    for layer in layers:
        monotone = True if layer.kind == "leaf-counts" else truth.monotone
        real = layer.call.real_epsilons(sensitivity[layer.kind], monotone)
        node_eps[layer.nodes] = real[0] if layer.kind == "leaf-counts" else real
    path = node_eps.copy()
    for d in range(1, int(depth.max(initial=0)) + 1):
        at = np.flatnonzero(depth == d)
        path[at] += path[parent[at]]
    check_path_budgets(forest, node_eps, path)
    per_tree = np.array(
        [path[a:b][is_leaf[a:b]].max() for a, b in zip(trees.tree_offsets[:-1], trees.tree_offsets[1:])]
    )
    params = forest.parts[0][1]
    trees_eps = float(per_tree.max() if params.composition == "parallel" else math.fsum(per_tree))
    return count_eps, count_eps + trees_eps


_PATH_AGREEMENT = 1e-9
"""Relative agreement of a path's real ε with the tree's ε: a path may fall short by the samplers' scale
inflation (1e-12 per draw) and float rounding, never by a share of the budget."""


def _layer_weights(schedule: str, n_layers: int) -> np.ndarray:
    """The schedule's share of a tree's ε for layers 1..L, from the formulas (not the library's code).

    harmonic (eDPRF formula 9, production): ``eps_k = eps / s * 1 / (L - k + 1)``, ``s = sum_{j=1..L} 1/j``;
    uniform: ``eps / L``; linear: proportional to ``k``.
    """
    k = np.arange(1, n_layers + 1, dtype=np.float64)
    if schedule == "harmonic":
        return (1.0 / (n_layers - k + 1)) / math.fsum(1.0 / j for j in range(1, n_layers + 1))
    if schedule == "uniform":
        return np.full(n_layers, 1.0 / n_layers)
    if schedule == "linear":
        return k / k.sum()
    raise AccountingError(f"the release names a layer schedule {schedule!r} the audit has no formula for")


def check_path_budgets(forest: DPForest, node_eps: np.ndarray, path_eps: np.ndarray) -> None:
    """Every root-to-leaf path spends exactly its tree's ε, each node its share (eDPRF formulas 9 and 10).

    ``node_eps`` is each node's real ε (from the scales OpenDP drew with, for the TRUE sensitivities),
    ``path_eps`` the sum over the node's path from its root.  The tree's ε is the release's public
    ``epsilon - count_epsilon`` (divided by the number of trees under sequential composition); with
    ``L = max_depth + 1`` layers, a split at layer ``k`` must spend ``eps_k`` of the schedule
    (harmonic: ``eps / s * 1 / (L - k + 1)``, ``s = sum_{j=1..L} 1/j``) and a leaf at layer ``l`` the
    rest of its path's budget, ``eps - sum_{m<l} eps_m`` (leaf alignment), so that every path, short or
    full, spends ``eps``.  Each within :data:`_PATH_AGREEMENT` (relative) below and the float slack
    above.  A leaf that spends less than its path's rest is a model that claims more noise-to-signal
    than it drew, or a ledger charged for what no record faced; one that spends more, an undercharge.
    """
    params = forest.parts[0][1]
    trees = forest.trees
    n_layers = params.max_depth + 1
    tree_eps = params.epsilon - params.count_epsilon
    if params.composition != "parallel":
        tree_eps /= params.n_trees
    layer_eps = tree_eps * _layer_weights(params.schedule, n_layers)
    spent_above = np.concatenate([[0.0], np.cumsum(layer_eps)[:-1]])
    depth, _ = trees.depths_and_parents()
    is_leaf = trees.feature < 0
    want = np.where(is_leaf, tree_eps - spent_above[depth], layer_eps[depth])

    def off(real: np.ndarray, expected: np.ndarray) -> np.ndarray:
        too_much, too_little = real > expected * (1 + _RELATIVE_SLACK), real < expected * (1 - _PATH_AGREEMENT)
        return too_much | too_little | ~np.isfinite(real)

    for what, real, expected, nodes in (
        ("node", node_eps, want, np.arange(trees.n_nodes)),
        ("root-to-leaf path", path_eps[is_leaf], np.full(int(is_leaf.sum()), tree_eps), np.flatnonzero(is_leaf)),
    ):
        bad = np.flatnonzero(off(real, expected))
        if bad.size:
            i = int(nodes[bad[0]])
            t = int(np.searchsorted(trees.tree_offsets, i, side="right")) - 1
            kind = "leaf" if is_leaf[i] else "split"
            raise AccountingError(
                f"tree {t}, {kind} node {i - int(trees.tree_offsets[t])} at layer {int(depth[i]) + 1} of {n_layers}: "
                f"its {what} spends epsilon {float(real[bad[0]])!r}, the rule gives {float(expected[bad[0]])!r} "
                f"(tree epsilon {tree_eps!r}, {params.schedule} schedule)"
            )


def check_mechanism_inputs(
    calls: list[MechanismCall], forest: DPForest, n_rows: int, tree_rows: int | None = None
) -> None:
    """The mechanisms saw the data at its true size: the row count, and every tree row in one leaf.

    The DP row count's input is ``[n_rows]``; under parallel composition each of the trees'
    ``tree_rows`` rows (all ``n_rows`` unless a marginals part took the others) reaches exactly
    one leaf, so the leaves' class counts (or label utilities) add up to ``tree_rows``.  A copy
    that scales the counts up (less noise relative to them) or drops rows fails here.
    """
    count, layers = _match_fit(calls, forest)
    if count is not None and count.values.ravel().tolist() != [n_rows]:
        raise AccountingError(f"the DP row count was given {count.values.ravel().tolist()}, the fit had {n_rows} rows")
    want = n_rows if tree_rows is None else tree_rows
    if forest.parts[0][1].composition == "parallel":
        total = sum(int(np.sum(layer.call.values)) for layer in layers if layer.kind != "split")
        if total != want:
            raise AccountingError(f"the leaves' mechanisms saw {total} rows, the trees had {want}")


def check_released_values(calls: list[MechanismCall], forest: DPForest) -> None:
    """Every released node value is post-processing of the recorded mechanism outputs.

    Leaf counts are the noisy counts clamped to ``0..MAX_LEAF_COUNT`` and the leaf's class
    their argmax; a leaf label is the selection's output; a split is the selected candidate
    (multiway: the feature; binary: the candidate's feature and threshold or category).
    Raises :class:`AccountingError` on the first released value that is not.
    """
    _, layers = _match_fit(calls, forest)
    trees = forest.trees
    grid = FeatureGrid.from_schema(forest.schema, forest.grid_bins)
    n_codes = np.asarray(grid.n_codes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_codes[:-1])]).astype(np.int64)
    candidates = _Candidates.from_grid(grid, offsets) if forest.split_mode == "binary" else None
    for layer in layers:
        out = np.asarray(layer.call.output)
        nodes = layer.nodes
        if layer.kind == "leaf-counts":
            same = np.array_equal(trees.leaf_counts[nodes], np.clip(out, 0, MAX_LEAF_COUNT)) and np.array_equal(
                trees.leaf_class[nodes], np.argmax(out, axis=1)
            )
        elif layer.kind == "leaf-label":
            same = np.array_equal(trees.leaf_class[nodes], out)
        elif candidates is None:
            same = np.array_equal(trees.feature[nodes], out)
        else:
            same = np.array_equal(trees.feature[nodes], candidates.feature[out]) and np.array_equal(
                trees.split[nodes], candidates.split[out]
            )
        if not same:
            raise AccountingError(
                f"the released {layer.kind} values of {nodes.size} nodes are not what the "
                f"mechanism call from {layer.call.site} output"
            )


def account_fit(
    calls: list[MechanismCall], forest: DPForest, n_rows: int, truth: TrueSensitivity = ADD_REMOVE
) -> tuple[float, float]:
    """All the checks of one fit's record; returns :func:`charged_epsilon_of_fit`'s ``(row count ε, total ε)``."""
    epsilons = charged_epsilon_of_fit(calls, forest, truth)
    check_mechanism_inputs(calls, forest, n_rows)
    check_released_values(calls, forest)
    return epsilons


def charged_epsilon_of_evaluation(calls: list[MechanismCall], truth: TrueSensitivity = ADD_REMOVE) -> float:
    """ε of a noised evaluation, from its real noise: exactly one count call on ``(correct, total)``."""
    if len(calls) != 1 or not _is_count_call(calls[0]) or calls[0].shape != (2,):
        raise AccountingError(
            f"a noised evaluation must make one count call on (correct, total), got {[(c.api, c.shape) for c in calls]}"
        )
    return float(calls[0].real_epsilons(truth.evaluation, True)[0])


def account_marginals(
    calls: list[MechanismCall],
    marginals: NoisyMarginals,
    codes: np.ndarray,
    y: np.ndarray,
    truth: TrueSensitivity = ADD_REMOVE,
) -> float:
    """ε of a release of DP one-way marginals for one record, rebuilt from the real noise of ``calls``.

    The calls must be exactly one count call per histogram, in feature order, each on the
    ``(n_codes[j], K)`` histogram of the rows ``codes``, ``y`` (recounted here in Python, not
    with the library's code), each drawing exact noise whose real ε for the TRUE sensitivity of
    a histogram (1 add-remove, 2 replace-one: a record sits in one cell of each) is at most its
    share ``epsilon / d`` of the release's budget; every released histogram must be its call's
    output clamped to the release range.  Returns the sum of the real ε's (sequential
    composition over histograms of the same rows); raises :class:`AccountingError` otherwise.
    """
    d, k = marginals.n_features, marginals.n_classes
    if marginals.relation != truth.relation:
        raise AccountingError(f"the release says {marginals.relation}, the audit is for {truth.relation}")
    if len(calls) != d or not all(_is_count_call(c) for c in calls):
        raise AccountingError(
            f"a release of {d} histograms made {len(calls)} mechanism calls: {[(c.api, c.shape) for c in calls]}"
        )
    share = marginals.epsilon / d
    low, high = RELEASE_RANGE
    real = []
    for j, (call, released) in enumerate(zip(calls, marginals.counts)):
        n_codes = released.shape[0]
        if call.shape != (n_codes, k):
            raise AccountingError(f"histogram {j} is {(n_codes, k)} but its call drew on shape {call.shape}")
        exact = np.zeros((n_codes, k), dtype=np.int64)
        for row, label in zip(np.asarray(codes)[:, j].tolist(), np.asarray(y).tolist()):
            exact[row, label] += 1
        if not np.array_equal(call.values, exact):
            raise AccountingError(f"histogram {j}'s mechanism saw other counts than the rows' (from {call.site})")
        cost = float(call.real_epsilons(truth.leaf_counts, True)[0])
        if cost > share * (1 + _RELATIVE_SLACK):
            raise AccountingError(
                f"histogram {j}'s noise costs epsilon {cost!r} for the true sensitivity {truth.leaf_counts}, "
                f"more than its share {share!r} of the release's {marginals.epsilon!r}"
            )
        if not np.array_equal(released, np.clip(call.output, low, high)):
            raise AccountingError(f"histogram {j}'s released counts are not its mechanism's output (from {call.site})")
        real.append(cost)
    return math.fsum(real)


MARGINALS_SITE = "edprf_core._marginals"
"""The module whose count calls are the marginals part's histograms (``release_marginals``)."""

RESIDUAL_SITE = "edprf_core._residual_pass"
"""The module whose count calls are a residual pass's sums (``release_residual_pass``)."""


def account_residual_pass(
    calls: list[MechanismCall],
    marginals: NoisyMarginals,
    codes: np.ndarray,
    y: np.ndarray,
    truth: TrueSensitivity = ADD_REMOVE,
) -> float:
    """ε of a residual pass for one record, rebuilt from the real noise of ``calls``.

    The calls must be exactly one count call per feature, in feature order, each on the vector of
    per-bin sums of ``round(Q (y - p))`` over the rows ``codes``, ``y`` (the part's rows), where ``p``
    is the model replayed HERE from the released values only: the histograms' tempered naive-Bayes
    tables (``edprf_core._marginals.naive_bayes_tables``, which read the histograms and nothing else;
    not the pass module's own binding, so a pass that started from anything else is caught) moved by
    each earlier feature's step, recomputed here from its released sums.  A record adds one integer in ``[-Q, Q]`` to one bin,
    so the TRUE sensitivity is ``Q`` (``2 Q`` under replace-one); each call's noise must cost at most
    the pass's ``epsilon / d`` for it, and every released sum must be its call's output clamped to ``Q``
    times the release range.  Returns the sum of the real ε's (adaptive sequential composition);
    raises :class:`AccountingError` otherwise.
    """
    from edprf_core._marginals import marginals_temper, naive_bayes_tables
    from edprf_core._residual_pass import RESIDUAL_RIDGE

    extra = marginals.residual_pass
    if extra is None:
        raise AccountingError("the marginals part carries no residual pass to account for")
    d, q = marginals.n_features, extra.quantum
    if len(calls) != d or not all(_is_count_call(c) for c in calls):
        raise AccountingError(f"a residual pass over {d} features made {len(calls)} mechanism calls")
    bare = NoisyMarginals(marginals.counts, marginals.epsilon, marginals.relation, marginals.n_classes)
    log_prior, tables = naive_bayes_tables(bare)
    temper = marginals_temper(d)
    intercept = float(log_prior[1] - log_prior[0])
    terms = [temper * (t[:, 1] - t[:, 0]) for t in tables]
    prior = 1.0 / (1.0 + math.exp(-intercept))
    curvature = prior * (1.0 - prior)
    sensitivity = truth.leaf_counts * q
    relation_sensitivity = 2 if marginals.relation == "replace-one" else 1  # the release's, as its replay uses
    noise_sd = math.sqrt(2.0) * relation_sensitivity * d / extra.epsilon
    codes = np.asarray(codes, dtype=np.int64)
    labels = np.asarray(y, dtype=np.float64)
    low, high = (q * bound for bound in RELEASE_RANGE)
    real = []
    for j, (call, released) in enumerate(zip(calls, extra.sums)):
        logit = intercept + sum(term[codes[:, k]] for k, term in enumerate(terms))
        residual = np.clip(np.rint(q * (labels - 1.0 / (1.0 + np.exp(-logit)))), -q, q).astype(np.int64)
        exact = np.zeros(marginals.n_codes[j], dtype=np.int64)
        np.add.at(exact, codes[:, j], residual)
        if call.shape != exact.shape or not np.array_equal(call.values, exact):
            raise AccountingError(
                f"residual sum {j}'s mechanism saw other sums than the part's rows against the released model "
                f"(from {call.site})"
            )
        cost = float(call.real_epsilons(sensitivity, True)[0])
        if cost > extra.epsilon / d * (1 + _RELATIVE_SLACK):
            raise AccountingError(
                f"residual sum {j}'s noise costs epsilon {cost!r} for the true sensitivity {sensitivity}, more "
                f"than its share {extra.epsilon / d!r} of the pass's {extra.epsilon!r}"
            )
        if not np.array_equal(released, np.clip(call.output, low, high)):
            raise AccountingError(f"residual sum {j}'s released values are not its mechanism's output")
        rows_in_bin = np.maximum(marginals.counts[j].sum(axis=1), 0)
        terms[j] = terms[j] + (released / q) / (rows_in_bin * curvature + RESIDUAL_RIDGE * noise_sd)
        real.append(cost)
    return math.fsum(real)


@dataclass(frozen=True)
class MixedAccount:
    """What one record faces in a fit with a marginals part, each term rebuilt from the real noise.

    ``per_record = count + max(trees, marginals)``: the DP row count reads every row; each
    other row feeds the trees or the marginals, never both (parallel composition).
    """

    count: float
    trees: float
    marginals: float

    @property
    def per_record(self) -> float:
        return self.count + max(self.trees, self.marginals)


def account_mixed_fit(
    calls: list[MechanismCall],
    forest: DPForest,
    codes: np.ndarray,
    y: np.ndarray,
    to_marginals: np.ndarray,
    truth: TrueSensitivity = ADD_REMOVE,
) -> MixedAccount:
    """The checks of one fit with a marginals part (``marginals_share > 0``); see :class:`MixedAccount`.

    ``codes`` (all the fit's rows on the marginals grid), ``y`` (their class indices) and
    ``to_marginals`` (the rows the fit assigned to the marginals, recorded where it drew them)
    are the TRUE inputs.  The calls from :data:`MARGINALS_SITE` must be exactly one measured
    exact release per histogram (one OpenDP draw each) on the true histograms of the rows
    assigned to the marginals, each at most ``(epsilon - count_epsilon) / d`` for the true
    sensitivity (:func:`account_marginals`, with the release's budget taken from its
    parameters by the decoder); every other call must match the released trees
    (:func:`charged_epsilon_of_fit`), the row count must have read all the rows, and the
    leaves' class totals must be exactly those of the rows NOT assigned to the marginals
    (the trees and the marginals saw disjoint rows).  Raises :class:`AccountingError` otherwise.
    """
    params = forest.parts[0][1]
    if params.marginals_share <= 0 or forest.marginals is None:
        raise AccountingError("the release has no marginals part to account for")
    mask = np.asarray(to_marginals, dtype=bool)
    labels = np.asarray(y, dtype=np.int64)
    ours = [c for c in calls if c.site == MARGINALS_SITE]
    rest = [c for c in calls if c.site != MARGINALS_SITE]
    if any(len(c.draws) != 1 for c in ours):
        raise AccountingError(f"the marginals made {[len(c.draws) for c in ours]} draws per histogram, expected 1 each")
    if not math.isclose(forest.marginals.epsilon, params.forest_epsilon, rel_tol=1e-12):
        raise AccountingError(
            f"the marginals claim epsilon {forest.marginals.epsilon!r}, the parameters give {params.forest_epsilon!r}"
        )
    marginals = account_marginals(ours, forest.marginals, np.asarray(codes)[mask], labels[mask], truth)
    count, total = charged_epsilon_of_fit(rest, forest, truth)
    count_call, layers = _match_fit(rest, forest)
    if count_call is not None and count_call.values.ravel().tolist() != [labels.size]:
        raise AccountingError(
            f"the DP row count was given {count_call.values.ravel().tolist()}, the fit had {labels.size} rows"
        )
    k = forest.schema.n_classes
    seen = np.zeros(k, dtype=np.int64)
    for layer in layers:
        if layer.kind == "leaf-counts":
            seen += np.asarray(layer.call.values, dtype=np.int64).reshape(-1, k).sum(axis=0)
    if params.leaf == "counts" and not np.array_equal(seen, np.bincount(labels[~mask], minlength=k)):
        raise AccountingError(
            f"the trees' leaves saw class totals {seen.tolist()}, the rows not assigned to the marginals hold "
            f"{np.bincount(labels[~mask], minlength=k).tolist()} (the parts must see disjoint rows)"
        )
    check_released_values(rest, forest)
    return MixedAccount(count, total - count, marginals)
