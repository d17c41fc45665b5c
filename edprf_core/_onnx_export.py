"""Export a forest's pooled probabilities as an ONNX graph (onnxruntime, any language).

The graph
---------
Input ``codes``: ``tensor(double)`` of shape ``(n_rows, n_features)``, the
schema's integer codes of each row (the public encoding below).  Output
``probabilities``: ``tensor(double)`` of shape ``(n_rows, n_classes)``, the
classes in the schema's order (listed in the encoding).  The graph follows
:meth:`edprf_core.DPForest.predict_proba` step by step
(:mod:`edprf_core._leaf_terms`):

1. one ``ai.onnx.ml.TreeEnsembleRegressor`` (opset 3; thresholds and leaf
   vectors stored in double through its ``*_as_tensor`` attributes) adds
   the vector of the row's leaf in every tree to its part's score, one
   target per part and class; its float32 output is cast to double and
   reshaped to ``(n_rows, n_parts, n_classes)``;
2. with ``2 f + 1`` parts or more, the bounded mean: ``TopK`` sorts each
   class's part scores, each is clipped (``Max``/``Min``) to the ``(f+1)``-th
   smallest and largest widened by the part's margin (``part_clip_margins``:
   ``PLAUSIBLE_CLIP_MARGIN`` for a part of plausible size, ``CLIP_MARGIN``
   otherwise; a constant per part) times ``max(their difference, the tightest
   range of any f + 1 part scores)`` (``clipped_part_values``);
   then the weighted sum with the parts' capped, normalized weights
   (constants from ``capped_part_weights``, the plausible-size factor
   included);
3. log-linear pooling: ``Softmax(log pi + T**e * pooled)``; mean pooling:
   ``pooled / sum(pooled)``; label votes: the sum as it is.

The float32 rounding of step 1 moves a probability by about 2e-8; the tests
(``tests/protocol/test_onnx_export.py``) require 1e-6 on 10,000 rows of each
shared dataset, with three parties (the bound active).

A forest with a marginals part
------------------------------
A forest fitted with ``marginals_share > 0`` (:attr:`~edprf_core.DPForest.marginals`)
mixes its trees with DP one-way marginals scored on a second public grid
(``marginals_bins`` bins), so its graph has two inputs, both ``tensor(double)``
of shape ``(n_rows, n_features)``: ``codes`` (the trees' grid, as above) and
``marginals_codes`` (the same row on the marginals' grid: the same recipe with
the ``marginals_edges`` of the encoding; categorical codes are the same on both
grids).  Steps 1-3 give the trees' probabilities ``p_t``; then

4. the marginals' log-scores: each feature's code (clamped to its own code
   range, so a bad code never reads another feature's table) indexes one row
   of its precomputed table ``temper * log(p_j(c | bin) / q_j)``
   (:func:`edprf_core._marginals.marginal_log_ratio_tables`, tempered by
   :func:`~edprf_core._marginals.marginals_temper`), one ``Gather`` over the
   tables stacked end to end; the rows are summed over features, the log
   prior added, and ``LogSoftmax`` gives ``log p_m``;
5. the mix (:func:`edprf_core._marginals.mix_probabilities`):
   ``Softmax(s * max(log p_m, log 1e-12) + (1 - s) * log(clip(p_t, 1e-12, 1)))``
   with ``s`` the forest's ``marginals_share``.

A trees-only forest's graph is exactly the one-input graph above.

Support: the rows the model knows nothing about
-----------------------------------------------
Three more outputs, after ``probabilities``, give per row what
:func:`edprf_core.prediction.row_support` gives (``edprf predict``'s
``support`` column; :mod:`edprf_core._support`), exactly:

6. the ensemble of step 1 has two more targets (step 1 takes the parts'
   scores from the targets before them): every leaf that released counts
   adds 1 to the first, and 1 to the second when its released mass is
   within noise, so on a row they hold the number of count trees it reaches
   and of those whose leaf is within noise (small integers: exact in
   float32).  ``support_low_leaf_share``, ``tensor(double)`` of shape
   ``(n_rows,)``: their ratio, NaN when the first is 0 (no tree released
   counts).  ``support_low_features``, ``tensor(bool)`` of shape
   ``(n_rows, n_features)``: per feature, whether the row's marginals bin is
   within noise, one ``Gather`` of the bins' flags stacked end to end at the
   clamped rows of step 4 (all false without a marginals part).
   ``support_low``, ``tensor(bool)`` of shape ``(n_rows,)``: some feature
   flagged, or the share above 0.5.

A model holding no released counts (label leaves, no marginals part) flags no
row (all false, share NaN) and its encoding says ``"assessed": false``:
its rows' support is not known (``edprf predict`` writes ``n/a``), not
``ok``.  The encoding's ``support`` entry says what each output means and
how ``edprf predict`` labels a row from them.

Splits on codes: a binary split on a continuous feature sends ``code < j``
to its first child (``BRANCH_LT``), on a categorical feature ``code == c``
(``BRANCH_EQ``); a multiway split becomes a chain of ``BRANCH_LT`` nodes
(``code < 1``, ``code < 2``, ...), one per child but the last.

The encoding is exported beside the graph, not in it
----------------------------------------------------
The schema's cell rules (text cells, missing tokens, catch-all categories,
refusals) do not fit ONNX operators well, so the graph takes codes and the
encoding travels as JSON (:func:`encoding_spec`, also stored in the model's
``metadata_props`` under ``edprf.encoding``).  Recipe, per feature ``f``:

- continuous: a missing cell follows ``missing`` (a number: use it;
  ``"separate"``: code ``len(edges) + 1``; ``"refuse"``: the row cannot be
  scored); otherwise clip the number to ``[lower, upper]`` and take the
  number of ``edges`` that are ``<= x`` (``numpy.searchsorted(edges, x,
  side="right")``);
- categorical: the index of the cell among ``categories`` (numbers compared
  as numbers, text as text in Unicode's composed form NFC; when every
  category is a plain integer's text, ``"1.0"`` also meets ``"1"``); an
  undeclared value follows ``unknown`` (a
  declared category, or refuse); a missing cell follows ``missing`` (a
  category, ``"separate"``: code ``len(categories)``, or refuse).

In Python the package does it exactly: ``encode_features(X, schema,
FeatureGrid.from_schema(schema, n_bins))`` with ``schema =
Schema.from_toml(spec["schema_toml"])`` and ``n_bins = spec["n_bins"]``
(and ``spec["marginals"]["n_bins"]`` for ``marginals_codes``);
:func:`onnx_inputs` builds the graph's whole input from the spec.

Privacy cost: none.  The graph holds the released structure, vectors
computed from released counts and public parameters, the support flags
(post-processing of the released counts and of public parameters: each
count's ε, the relation, ``d``) and the public schema; exporting reads no
data.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ._domain_warning import warn_if_clipped
from ._encoding import _MAX_REPORTED, FeatureGrid, _refuse, _row_names, as_frame, encode_features
from ._exceptions import DataValidationError
from ._forest import DPForest, check_is_forest
from ._leaf_terms import leaf_terms
from ._marginals import MIX_FLOOR, marginal_log_ratio_tables, marginals_temper
from ._schema import ContinuousFeature, Schema
from ._support import TREES_WORD, Z_SCORE, support_flags
from .count_text import count_text

__all__ = ["ENCODING_FORMATS", "ONNX_ML_OPSET", "ONNX_OPSET", "encoding_spec", "forest_to_onnx", "onnx_inputs"]

ONNX_OPSET = 17
"""Default-domain opset of the graph (Softmax over axis 1)."""
ONNX_ML_OPSET = 3
"""``ai.onnx.ml`` opset of TreeEnsembleRegressor (the ``*_as_tensor`` double attributes)."""

INPUT_NAME = "codes"
MARGINALS_INPUT_NAME = "marginals_codes"
OUTPUT_NAME = "probabilities"
SUPPORT_LOW_NAME = "support_low"
SUPPORT_FEATURES_NAME = "support_low_features"
SUPPORT_SHARE_NAME = "support_low_leaf_share"
OUTPUT_NAMES = (OUTPUT_NAME, SUPPORT_LOW_NAME, SUPPORT_FEATURES_NAME, SUPPORT_SHARE_NAME)
"""The graph's outputs, in order (``probabilities`` first, as before the support outputs existed)."""

TREES_FORMAT = "edprf.onnx-encoding.v3"
"""The encoding's ``format`` for a trees-only forest (one input, ``codes``)."""
MIXED_FORMAT = "edprf.onnx-encoding.v4"
"""The encoding's ``format`` for a forest with a marginals part (inputs ``codes`` and ``marginals_codes``)."""
ENCODING_FORMATS = {
    "edprf.onnx-encoding.v1": "trees only, written before 0.2.1",
    "edprf.onnx-encoding.v2": "with a marginals part, written before 0.2.1",
    TREES_FORMAT: "trees only, 0.2.1 on: the four outputs; a numeric missing token also meets its number",
    MIXED_FORMAT: "with a marginals part, 0.2.1 on: the four outputs; a numeric missing token also meets its number",
}
"""Every encoding format an export has written, and what tells it apart.  v1 and v2 were written before 0.2.1:
those of 0.2.0 already had the four outputs and its recipe (their encoding lists ``outputs``); earlier ones had
only ``probabilities`` and read a cell such as ``-999.0`` as a number where the schema declares ``-999`` missing.
:func:`onnx_inputs` encodes under the current rules whichever format it is given."""


def encoding_spec(forest: DPForest) -> dict[str, Any]:
    """The public encoding of the graph's input(s), as a JSON-ready dict (see the module docstring).

    A trees-only forest gets format ``edprf.onnx-encoding.v3`` (one input, ``codes``).  A forest with a
    marginals part gets ``edprf.onnx-encoding.v4``: the same keys, plus ``inputs`` (both input names),
    ``marginals`` (``input``, ``n_bins`` and ``share``) and, per continuous feature, ``marginals_edges``.
    Both list the graph's ``outputs`` (``probabilities``, ``support_low``, ``support_low_features``,
    ``support_low_leaf_share``) and say under ``support`` what they mean (``meaning``), the rule's ``z_score``
    and whether the model can flag rows at all (``assessed``: false when it holds no released counts).
    (Exports before 0.2.0 wrote v1 and v2: :data:`ENCODING_FORMATS`.)

    Privacy cost: none (public schema and grids; the marginals' share and bins are public parameters;
    ``assessed`` says only whether released counts exist).
    """
    check_is_forest(forest, "encoding_spec", marginals_supported=True)
    schema, grid = forest.schema, forest.grid
    mixed = forest.marginals is not None
    marginals_grid = FeatureGrid.from_schema(schema, forest.marginals_bins) if mixed else grid
    features = []
    for f, edges, marginals_edges in zip(schema.features, grid.edges, marginals_grid.edges):
        item: dict[str, Any] = {"name": f.name, "kind": f.kind, "missing": f.missing}
        if isinstance(f, ContinuousFeature):
            item |= {"lower": f.lower, "upper": f.upper, "edges": [float(e) for e in edges]}
            if mixed:
                item["marginals_edges"] = [float(e) for e in marginals_edges]
        else:
            item |= {"categories": list(f.categories), "unknown": f.unknown}
        features.append(item)
    recipe = (
        "a cell is missing when empty/null, equal as text to one of missing_values, or, in a column read as "
        "numbers (continuous, numeric categories), a number equal to one of them that is a number ('-999' also "
        "meets -999.0); "
        "continuous: missing -> rule (number: impute; separate: code len(edges)+1; refuse: row not "
        "scored), else code = number of edges <= clip(x, lower, upper); categorical: code = index in "
        "categories (text compared in Unicode NFC; when every category is a plain integer's text, a cell that "
        "is such an integer written with a point and zeros, '1.0', meets it), undeclared -> unknown rule, "
        "missing -> missing rule (separate: code len(categories)). Feed the codes as float64, shape (n_rows, "
        "n_features), in this order."
    )
    spec: dict[str, Any] = {
        "format": MIXED_FORMAT if mixed else TREES_FORMAT,
        "input": INPUT_NAME,
        "output": OUTPUT_NAME,
        "classes": list(schema.classes),
        "schema_fingerprint": schema.fingerprint,
        "n_bins": forest.grid_bins,
        "missing_values": list(schema.missing_values),
        "strip_whitespace": bool(schema.strip_whitespace),
        "features": features,
        "schema_toml": schema.to_toml(),
        "recipe": recipe,
        "outputs": list(OUTPUT_NAMES),
        "support": _support_spec(forest),
    }
    if mixed:
        spec |= {
            "inputs": [INPUT_NAME, MARGINALS_INPUT_NAME],
            "marginals": {
                "input": MARGINALS_INPUT_NAME,
                "n_bins": forest.marginals_bins,
                "share": forest.marginals_share,
            },
            "recipe": recipe
            + f" {MARGINALS_INPUT_NAME}: the same recipe with marginals_edges in place of edges (categorical "
            "codes are the same); feed both inputs.",
        }
    return spec


def _support_spec(forest: DPForest) -> dict[str, Any]:
    """The ``support`` entry of the encoding: whether the model can flag rows at all, and what the outputs mean."""
    node_flags, bin_flags = support_flags(forest)
    return {
        "assessed": bool(node_flags[:, 0].any() or bin_flags),
        "z_score": Z_SCORE,
        "meaning": (
            f"{OUTPUT_NAME}: float64 (n_rows, n_classes), columns in classes order. {SUPPORT_LOW_NAME}: bool "
            "(n_rows,), the row has low support (edprf predict's support column 'low: ...'): more than half of the "
            "trees that released counts put it in a leaf whose released mass is within noise, or its marginals "
            f"bin of some feature is (within {Z_SCORE:g} noise standard deviations of an empty one's); its "
            f"probability is not evidence. {SUPPORT_FEATURES_NAME}: bool (n_rows, n_features), features in the "
            "features order: whether the row's marginals bin of that feature is within noise (all false without "
            f"a marginals part). {SUPPORT_SHARE_NAME}: float64 (n_rows,), the share of the count trees whose leaf "
            "for the row is within noise (NaN when no tree released counts). Label as edprf predict: 'ok' when "
            "not low, else 'low: ' and the flagged features' names, then "
            f"'{TREES_WORD}' when the share is above 0.5, joined by ', '; 'n/a' for every row when assessed is "
            "false (the model holds no released counts: nothing is flagged)."
        ),
    }


def onnx_inputs(X: ArrayLike | pd.DataFrame, spec: dict[str, Any]) -> dict[str, NDArray[np.float64]]:
    """The graph's input feed for the rows ``X``, from the encoding ``spec`` alone (:func:`encoding_spec`).

    ``{"codes": ...}`` for a trees-only forest, ``{"codes": ..., "marginals_codes": ...}`` with a marginals
    part; each float64 of shape ``(n_rows, n_features)``, encoded by the package's encoder under the spec's
    schema (:func:`~edprf_core.encoding.encode_features`: the same clipping, missing and unknown rules).

    A DataFrame ``X`` is read by column name, as ``edprf predict`` reads a file: the spec's feature columns, in any
    order; other columns (a patient identifier, the label, notes) are ignored.  A feature column ``X`` lacks
    raises :class:`DataValidationError`.  An array ``X`` holds the features in the spec's order.

    Raises :class:`DataValidationError` when a cell breaks a ``refuse`` rule, naming every kind of problem
    found (column and rule, with how many rows and the first few) and how many rows have one; rows are named by
    their 0-based position in ``X`` (``X.iloc[i]``; with an index other than ``0..n-1``, its label too), never
    by a file's line number.

    Warns (:class:`DomainClippingWarning`, as ``predict_proba`` does) when a continuous column is mostly and far
    outside its declared bounds: the data may be in other units than the schema (the values are clipped either
    way).

    Privacy cost: none (a per-row map under public rules; reads only ``X``, the caller's rows).
    """
    if spec.get("format") not in ENCODING_FORMATS:
        raise ValueError(
            f"encoding spec: expected format one of {', '.join(ENCODING_FORMATS)}, got {spec.get('format')!r}; "
            "pass the encoding exported with the model (edprf export --format onnx writes it beside the graph)"
        )
    schema = Schema.from_toml(spec["schema_toml"])
    if schema.fingerprint != spec["schema_fingerprint"]:
        raise ValueError(
            f"encoding spec: expected schema fingerprint {spec['schema_fingerprint']}, got {schema.fingerprint} "
            "from its schema_toml; re-export the model"
        )
    grids = {spec["input"]: spec["n_bins"]}
    if "marginals" in spec:
        grids[spec["marginals"]["input"]] = spec["marginals"]["n_bins"]
    if isinstance(X, pd.DataFrame):  # as edprf predict: columns the schema does not read (an identifier) are ignored
        names = set(schema.feature_names)
        if names <= {str(c) for c in X.columns}:  # else as_frame names the missing ones, with a near miss among all
            X = X[[c for c in X.columns if str(c) in names]]
    frame = as_frame(X, schema)
    warn_if_clipped(frame, schema, stacklevel=2)
    inputs: dict[str, NDArray[np.float64]] = {}
    for name, n_bins in grids.items():
        problems: list[tuple[str, str, NDArray[np.bool_]]] = []  # the rules read cells, not bins: one grid finds all
        inputs[name] = encode_features(frame, schema, FeatureGrid.from_schema(schema, int(n_bins)), problems).astype(
            np.float64
        )
        if problems:
            raise _refused_rows(frame, problems)
    return inputs


def _refused_rows(frame: pd.DataFrame, problems: list[tuple[str, str, NDArray[np.bool_]]]) -> DataValidationError:
    """Every problem of ``frame`` (column, rule, how many rows, the first few named with their cells) and how many
    rows have one, rows named by their 0-based position in the frame (and index label, when it differs)."""
    refused = np.logical_or.reduce([mask for _, _, mask in problems])
    kinds = []
    for column, what, mask in problems:
        first = np.flatnonzero(mask)[:_MAX_REPORTED]  # the rows _refuse shows
        rows = _row_names(frame.index, first)
        kinds.append(str(_refuse(column, what, rows, frame[column].iloc[first].tolist(), int(mask.sum()))))
    n = int(refused.sum())
    return DataValidationError(
        f"{n} of {count_text(len(frame), 'row')} of X cannot be encoded under the schema's rules "
        f"(rows named by their 0-based position in X, X.iloc[i], not by a file's line number): " + "; ".join(kinds)
    )


def _tree_nodes(forest: DPForest) -> dict[str, list]:
    """Node and leaf attributes of TreeEnsembleRegressor for every tree (public structure only)."""
    trees = forest.trees
    is_cat = np.asarray(forest.grid.is_categorical, dtype=bool)
    n_children = trees.n_children(forest.grid, forest.split_mode)
    nodes: dict[str, list] = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "true", "false")}
    leaves: list[tuple[int, int, int]] = []  # (tree, node id, global node)

    def add(t: int, node_id: int, feature: int, mode: str, value: float, true: int, false: int) -> None:
        for key, v in zip(
            ("treeids", "nodeids", "featureids", "modes", "values", "true", "false"),
            (t, node_id, feature, mode, value, true, false),
        ):
            nodes[key].append(v)

    for t in range(trees.n_trees):
        a, b = int(trees.tree_offsets[t]), int(trees.tree_offsets[t + 1])
        next_id = b - a  # ids for the extra nodes of multiway chains
        for local in range(b - a):
            g = a + local
            f = int(trees.feature[g])
            if f < 0:
                add(t, local, 0, "LEAF", 0.0, 0, 0)
                leaves.append((t, local, g))
                continue
            first = int(trees.first_child[g])
            if forest.split_mode == "binary":
                mode = "BRANCH_EQ" if is_cat[f] else "BRANCH_LT"
                add(t, local, f, mode, float(trees.split[g]), first, first + 1)
                continue
            k = int(n_children[g])
            ids = [local] + list(range(next_id, next_id + k - 2))
            next_id += k - 2
            for i, node_id in enumerate(ids):
                false = ids[i + 1] if i + 1 < len(ids) else first + k - 1
                add(t, node_id, f, "BRANCH_LT", float(i + 1), first + i, false)
    return {"nodes": nodes, "leaves": leaves}


def _const(name: str, value: ArrayLike, dtype: type = np.float64):
    """A ``Constant`` node named ``name`` holding ``value``."""
    from onnx import helper, numpy_helper

    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name=name)
    )


def _mix_steps(forest: DPForest, trees_out: str) -> list:
    """Steps 4-5 of the module docstring: the marginals' log-probabilities and the mix with ``trees_out``."""
    from onnx import TensorProto, helper

    log_prior, tables = marginal_log_ratio_tables(forest.marginals)
    temper = marginals_temper(forest.marginals.n_features)
    n_codes = np.asarray(forest.marginals.n_codes, dtype=np.int64)
    share = forest.marginals_share
    return [
        helper.make_node("Cast", [MARGINALS_INPUT_NAME], ["marginals_int"], to=TensorProto.INT64),
        _const("marginals_zero", 0, np.int64),
        _const("marginals_last", n_codes - 1, np.int64),
        helper.make_node("Max", ["marginals_int", "marginals_zero"], ["marginals_above"]),
        helper.make_node("Min", ["marginals_above", "marginals_last"], ["marginals_within"]),
        # feature j's table starts at row offsets[j] of the stacked tables
        _const("marginals_offsets", np.concatenate([[0], np.cumsum(n_codes)[:-1]]), np.int64),
        helper.make_node("Add", ["marginals_within", "marginals_offsets"], ["marginals_rows"]),
        _const("marginals_tables", temper * np.concatenate(tables, axis=0)),
        helper.make_node("Gather", ["marginals_tables", "marginals_rows"], ["marginals_terms"], axis=0),
        _const("marginals_feature_axis", [1], np.int64),
        helper.make_node(
            "ReduceSum", ["marginals_terms", "marginals_feature_axis"], ["marginals_evidence"], keepdims=0
        ),
        _const("marginals_log_prior", log_prior),
        helper.make_node("Add", ["marginals_evidence", "marginals_log_prior"], ["marginals_scores"]),
        helper.make_node("LogSoftmax", ["marginals_scores"], ["marginals_log_proba"], axis=1),
        _const("log_floor", np.log(MIX_FLOOR)),
        helper.make_node("Max", ["marginals_log_proba", "log_floor"], ["marginals_log_floored"]),
        _const("floor", MIX_FLOOR),
        _const("one", 1.0),
        helper.make_node("Clip", [trees_out, "floor", "one"], ["tree_floored"]),
        helper.make_node("Log", ["tree_floored"], ["tree_log_proba"]),
        _const("marginals_share", share),
        _const("trees_share", 1.0 - share),
        helper.make_node("Mul", ["marginals_log_floored", "marginals_share"], ["marginals_mixed"]),
        helper.make_node("Mul", ["tree_log_proba", "trees_share"], ["trees_mixed"]),
        helper.make_node("Add", ["marginals_mixed", "trees_mixed"], ["mixed_scores"]),
        helper.make_node("Softmax", ["mixed_scores"], [OUTPUT_NAME], axis=1),
    ]


def _support_steps(n_scores: int, bin_flags: list[NDArray[np.bool_]]) -> list:
    """Step 6 of the module docstring: the support outputs, from the ensemble's two flag targets and, with a
    marginals part, the clamped rows of step 4 (``marginals_rows``)."""
    from onnx import TensorProto, helper

    steps = [
        # the ensemble's targets n_scores (count trees reached) and n_scores + 1 (low ones among them)
        _const("support_count_at", n_scores, np.int64),
        _const("support_low_at", n_scores + 1, np.int64),
        helper.make_node("Gather", ["all_scores", "support_count_at"], ["support_count"], axis=1),
        helper.make_node("Gather", ["all_scores", "support_low_at"], ["support_low_leaves"], axis=1),
        _const("support_zero", 0.0),
        _const("support_one", 1.0),
        _const("support_nan", np.nan),
        _const("support_half", 0.5),
        helper.make_node("Max", ["support_count", "support_one"], ["support_count_floor"]),
        helper.make_node("Div", ["support_low_leaves", "support_count_floor"], ["support_ratio"]),
        helper.make_node("Greater", ["support_count", "support_zero"], ["support_has_counts"]),
        helper.make_node("Where", ["support_has_counts", "support_ratio", "support_nan"], [SUPPORT_SHARE_NAME]),
        helper.make_node("Greater", [SUPPORT_SHARE_NAME, "support_half"], ["support_low_trees"]),  # NaN: false
    ]
    if bin_flags:  # feature j's flags start at offsets[j], as its table in step 4
        steps += [
            _const("support_bin_flags", np.concatenate(bin_flags), np.bool_),
            helper.make_node("Gather", ["support_bin_flags", "marginals_rows"], [SUPPORT_FEATURES_NAME], axis=0),
        ]
    else:  # no marginals part: no feature is flagged
        from onnx import numpy_helper

        steps += [
            helper.make_node("Shape", [INPUT_NAME], ["support_shape"]),
            helper.make_node(
                "ConstantOfShape",
                ["support_shape"],
                [SUPPORT_FEATURES_NAME],
                value=numpy_helper.from_array(np.zeros(1, dtype=np.bool_)),
            ),
        ]
    return steps + [
        helper.make_node("Cast", [SUPPORT_FEATURES_NAME], ["support_feature_ints"], to=TensorProto.INT64),
        _const("support_feature_axis", [1], np.int64),
        helper.make_node(
            "ReduceSum", ["support_feature_ints", "support_feature_axis"], ["support_n_features"], keepdims=0
        ),
        _const("support_no_feature", 0, np.int64),
        helper.make_node("Greater", ["support_n_features", "support_no_feature"], ["support_low_bins"]),
        helper.make_node("Or", ["support_low_bins", "support_low_trees"], [SUPPORT_LOW_NAME]),
    ]


def forest_to_onnx(
    forest: DPForest, *, pooling: str = "log-linear", label_shift: bool = True, tolerated_parties: int | None = None
):
    """An ``onnx.ModelProto`` computing ``forest.predict_proba(X, pooling=..., label_shift=...)`` from codes.

    ``pooling``, ``label_shift`` and ``tolerated_parties`` are those of
    :func:`~edprf_core.prediction.leaf_terms` and :meth:`~edprf_core.DPForest.predict_proba`
    (the defaults give its default output).

    Inputs: ``codes``, float64 ``(n_rows, n_features)``, the rows' codes on the trees' grid; with a marginals
    part also ``marginals_codes``, the same rows' codes on the marginals' grid (:func:`onnx_inputs` builds
    both from the encoding).  Output: ``probabilities``, float64 ``(n_rows, n_classes)``, the mix of the
    trees and the marginals when the forest has a marginals part (module docstring, steps 4-5); then, per row,
    what :func:`~edprf_core.prediction.row_support` gives (step 6): ``support_low``, bool ``(n_rows,)``
    (:attr:`RowSupport.low <edprf_core.prediction.RowSupport.low>`); ``support_low_features``, bool ``(n_rows,
    n_features)`` (``low_features``); ``support_low_leaf_share``, float64 ``(n_rows,)`` (``low_leaf_share``,
    NaN when no tree released counts).  ``probabilities`` is computed as it was before these outputs existed.

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``; the encoding is in ``metadata_props["edprf.encoding"]``.

    Privacy cost: none (post-processing of the released forest: its counts, structure and the public ε,
    relation and ``d`` behind the support flags; reads no data).
    """
    check_is_forest(forest, "forest_to_onnx", marginals_supported=True)
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    terms = leaf_terms(forest, pooling=pooling, label_shift=label_shift, tolerated_parties=tolerated_parties)
    n_classes, n_parts = forest.schema.n_classes, terms.n_parts
    built = _tree_nodes(forest)
    nodes, leaves = built["nodes"], built["leaves"]
    tree_of_leaf = np.array([t for t, _, _ in leaves], dtype=np.int64)
    weights = terms.node_terms[[g for _, _, g in leaves]]
    targets = terms.part_of_tree[tree_of_leaf][:, None] * n_classes + np.arange(n_classes)[None, :]
    n_scores = n_parts * n_classes
    # two more targets after the parts' scores (support, module docstring step 6): a count leaf adds 1 to the
    # first, a count leaf within noise 1 to the second (other leaves add nothing: no entry)
    node_flags, bin_flags = support_flags(forest)
    flags = node_flags[[g for _, _, g in leaves]]
    flag_leaf, flag_column = np.nonzero(flags)
    target_treeids = np.concatenate([np.repeat(tree_of_leaf, n_classes), tree_of_leaf[flag_leaf]])
    leaf_nodeids = np.array([n for _, n, _ in leaves], dtype=np.int64)
    target_nodeids = np.concatenate([np.repeat(leaf_nodeids, n_classes), leaf_nodeids[flag_leaf]])
    target_ids = np.concatenate([targets.ravel(), n_scores + flag_column])
    target_weights = np.concatenate([weights.astype(np.float64).ravel(), flags[flag_leaf, flag_column]])
    ensemble = helper.make_node(
        "TreeEnsembleRegressor",
        [INPUT_NAME],
        ["scores32"],
        domain="ai.onnx.ml",
        name="trees",
        n_targets=n_scores + 2,
        aggregate_function="SUM",
        post_transform="NONE",
        nodes_treeids=nodes["treeids"],
        nodes_nodeids=nodes["nodeids"],
        nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"],
        nodes_truenodeids=nodes["true"],
        nodes_falsenodeids=nodes["false"],
        nodes_values_as_tensor=numpy_helper.from_array(np.asarray(nodes["values"], dtype=np.float64)),
        target_treeids=target_treeids.tolist(),
        target_nodeids=target_nodeids.tolist(),
        target_ids=target_ids.tolist(),
        target_weights_as_tensor=numpy_helper.from_array(target_weights.astype(np.float64)),
    )

    trees_out = OUTPUT_NAME if forest.marginals is None else "tree_probabilities"

    steps = [
        ensemble,
        helper.make_node("Cast", ["scores32"], ["all_scores"], to=TensorProto.DOUBLE),
        _const("scores_start", [0], np.int64),
        _const("scores_end", [n_scores], np.int64),
        _const("scores_axis", [1], np.int64),
        helper.make_node("Slice", ["all_scores", "scores_start", "scores_end", "scores_axis"], ["flat"]),
        _const("part_shape", [-1, n_parts, n_classes], np.int64),
        helper.make_node("Reshape", ["flat", "part_shape"], ["parts"]),
    ]
    values = "parts"
    if terms.clips:  # bounded mean (item 5): clip each class's part score to the others' range
        f = terms.tolerated
        steps += [
            _const("n_parts", [n_parts], np.int64),
            helper.make_node("TopK", ["parts", "n_parts"], ["desc", "desc_index"], axis=1, largest=1, sorted=1),
            _const("high_at", f, np.int64),
            _const("low_at", n_parts - 1 - f, np.int64),
            helper.make_node("Gather", ["desc", "high_at"], ["high2"], axis=1),
            helper.make_node("Gather", ["desc", "low_at"], ["low2"], axis=1),
            _const("part_axis", [1], np.int64),
            helper.make_node("Unsqueeze", ["high2", "part_axis"], ["high"]),
            helper.make_node("Unsqueeze", ["low2", "part_axis"], ["low"]),
            # D = max(hi - lo, the tightest range of any f + 1 parts): desc[i] - desc[i + f], least over i
            _const("head_start", [0], np.int64),
            _const("head_end", [n_parts - f], np.int64),
            _const("tail_start", [f], np.int64),
            _const("tail_end", [n_parts], np.int64),
            helper.make_node("Slice", ["desc", "head_start", "head_end", "part_axis"], ["head"]),
            helper.make_node("Slice", ["desc", "tail_start", "tail_end", "part_axis"], ["tail"]),
            helper.make_node("Sub", ["head", "tail"], ["gaps"]),
            helper.make_node("ReduceMin", ["gaps"], ["spread"], axes=[1], keepdims=1),  # opset 17: an attribute
            helper.make_node("Sub", ["high", "low"], ["range"]),
            helper.make_node("Max", ["range", "spread"], ["width"]),
            _const("clip_margin", terms.clip_margins().reshape(1, n_parts, 1)),  # per part: plausible size or not
            helper.make_node("Mul", ["width", "clip_margin"], ["margin"]),
            helper.make_node("Sub", ["low", "margin"], ["lower"]),
            helper.make_node("Add", ["high", "margin"], ["upper"]),
            helper.make_node("Max", ["parts", "lower"], ["above"]),
            helper.make_node("Min", ["above", "upper"], ["clipped"]),
        ]
        values = "clipped"
    steps += [
        _const("part_weights", terms.effective_weights()),
        helper.make_node("Mul", [values, "part_weights"], ["weighted"]),
        _const("sum_axis", [1], np.int64),
        helper.make_node("ReduceSum", ["weighted", "sum_axis"], ["pooled"], keepdims=0),
    ]
    if terms.link == "softmax":
        steps += [
            _const("scale", terms.scale),
            _const("log_prior", np.log(terms.prior)),
            helper.make_node("Mul", ["pooled", "scale"], ["scaled"]),
            helper.make_node("Add", ["scaled", "log_prior"], ["scores"]),
            helper.make_node("Softmax", ["scores"], [trees_out], axis=1),
        ]
    elif terms.link == "normalize":
        steps += [
            helper.make_node("ReduceSum", ["pooled", "sum_axis"], ["total"], keepdims=1),
            helper.make_node("Div", ["pooled", "total"], [trees_out]),
        ]
    else:
        steps.append(helper.make_node("Identity", ["pooled"], [trees_out]))
    inputs = [INPUT_NAME]
    if forest.marginals is not None:
        steps += _mix_steps(forest, trees_out)
        inputs.append(MARGINALS_INPUT_NAME)
    steps += _support_steps(n_scores, bin_flags)
    n_features = forest.schema.n_features
    graph = helper.make_graph(
        steps,
        "edprf_forest",
        [helper.make_tensor_value_info(name, TensorProto.DOUBLE, [None, n_features]) for name in inputs],
        [
            helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.DOUBLE, [None, n_classes]),
            helper.make_tensor_value_info(SUPPORT_LOW_NAME, TensorProto.BOOL, [None]),
            helper.make_tensor_value_info(SUPPORT_FEATURES_NAME, TensorProto.BOOL, [None, n_features]),
            helper.make_tensor_value_info(SUPPORT_SHARE_NAME, TensorProto.DOUBLE, [None]),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid("ai.onnx.ml", ONNX_ML_OPSET)],
        producer_name="edprf-fl",
        doc_string=f"pooling={terms.pooling}",
    )
    model.ir_version = 8  # onnxruntime >= 1.14 reads it
    props = {
        "edprf.encoding": json.dumps(encoding_spec(forest), ensure_ascii=False),
        "edprf.pooling": terms.pooling,
        "edprf.guarantee": forest.guarantee(),
    }
    if forest.marginals is not None:
        props["edprf.marginals_share"] = repr(forest.marginals_share)
    helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    return model
