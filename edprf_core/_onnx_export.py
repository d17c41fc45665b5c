"""Export a forest's pooled probabilities as an ONNX graph (onnxruntime, any language).

The graph
---------
Input ``codes``: ``tensor(double)`` of shape ``(n_rows, n_features)``, the
schema's integer codes of each row (the public encoding below).  Output
``probabilities``: ``tensor(double)`` of shape ``(n_rows, n_classes)``, the
classes in the schema's order (listed in the encoding).  An
``ai.onnx.ml.TreeEnsembleRegressor`` (opset 3) finds the leaf of every tree
(one target per tree whose weight is the leaf's node index: its float32
output is exact below 2**24 nodes); a ``Gather`` takes each leaf's vector
(:mod:`edprf_core._leaf_terms`) from a double table, ``ReduceSum`` adds
them up and the bias is added, all in double precision (the ensemble's own
leaf sums would be float32); log-linear pooling ends with a ``Softmax``,
mean pooling and label votes use the sum as it is.  The result
equals :meth:`edprf_core.DPForest.predict_proba` up to floating-point
summation order (``tests/protocol/test_onnx_export.py``: within 1e-6 on
10,000 rows of each shared dataset).

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
  as numbers, text as text); an undeclared value follows ``unknown`` (a
  declared category, or refuse); a missing cell follows ``missing`` (a
  category, ``"separate"``: code ``len(categories)``, or refuse).

In Python the package does it exactly: ``encode_features(X, schema,
FeatureGrid.from_schema(schema, n_bins))`` with ``schema =
Schema.from_toml(spec["schema_toml"])`` and ``n_bins = spec["n_bins"]``.

Privacy cost: none.  The graph holds the released structure, vectors
computed from released counts and public parameters, and the public schema;
exporting reads no data.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._leaf_terms import leaf_terms
from ._release import DPForest
from ._schema import ContinuousFeature

__all__ = ["ONNX_ML_OPSET", "ONNX_OPSET", "encoding_spec", "forest_to_onnx"]

ONNX_OPSET = 17
"""Default-domain opset of the graph (Softmax over axis 1)."""
ONNX_ML_OPSET = 3
"""``ai.onnx.ml`` opset of TreeEnsembleRegressor (read by every onnxruntime since 1.2)."""

MAX_NODES = 1 << 24
"""Node indices travel through the tree ensemble as float32 leaf weights: exact below 2**24."""

INPUT_NAME = "codes"
OUTPUT_NAME = "probabilities"


def encoding_spec(forest: DPForest) -> dict[str, Any]:
    """The public encoding of the graph's input, as a JSON-ready dict (see the module docstring).

    Privacy cost: none (public schema and grid).
    """
    schema, grid = forest.schema, forest.grid
    features = []
    for f, edges in zip(schema.features, grid.edges):
        item: dict[str, Any] = {"name": f.name, "kind": f.kind, "missing": f.missing}
        if isinstance(f, ContinuousFeature):
            item |= {"lower": f.lower, "upper": f.upper, "edges": [float(e) for e in edges]}
        else:
            item |= {"categories": list(f.categories), "unknown": f.unknown}
        features.append(item)
    return {
        "format": "edprf.onnx-encoding.v1",
        "input": INPUT_NAME,
        "output": OUTPUT_NAME,
        "classes": list(schema.classes),
        "schema_fingerprint": schema.fingerprint,
        "n_bins": forest.grid_bins,
        "missing_values": list(schema.missing_values),
        "strip_whitespace": bool(schema.strip_whitespace),
        "features": features,
        "schema_toml": schema.to_toml(),
        "recipe": ("continuous: missing -> rule (number: impute; separate: code len(edges)+1; refuse: row not "
                   "scored), else code = number of edges <= clip(x, lower, upper); categorical: code = index in "
                   "categories, undeclared -> unknown rule, missing -> missing rule (separate: code "
                   "len(categories)). Feed the codes as float64, shape (n_rows, n_features), in this order."),
    }


def _tree_nodes(forest: DPForest) -> dict[str, list]:
    """Node and leaf attributes of TreeEnsembleRegressor for every tree (public structure only)."""
    trees = forest.trees
    is_cat = np.asarray(forest.grid.is_categorical, dtype=bool)
    n_children = trees.n_children(forest.grid, forest.split_mode)
    nodes: dict[str, list] = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "true", "false")}
    leaves: list[tuple[int, int, int]] = []  # (tree, node id, global node)

    def add(t: int, node_id: int, feature: int, mode: str, value: float, true: int, false: int) -> None:
        for key, v in zip(("treeids", "nodeids", "featureids", "modes", "values", "true", "false"),
                          (t, node_id, feature, mode, value, true, false)):
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


def forest_to_onnx(forest: DPForest, *, pooling: str = "log-linear", label_shift: bool = True):
    """An ``onnx.ModelProto`` computing ``forest.predict_proba(X, pooling=..., label_shift=...)`` from codes.

    Parameters
    ----------
    forest : DPForest
    pooling : {"log-linear", "mean"}, default "log-linear"
    label_shift : bool, default True
        As in :meth:`~edprf_core.DPForest.predict_proba` (the defaults give its default output).

    Returns
    -------
    onnx.ModelProto
        Checked with ``onnx.checker``; the encoding is in ``metadata_props["edprf.encoding"]``.

    Privacy cost: none (post-processing of the released forest; reads no data).
    """
    import onnx
    from onnx import TensorProto, helper

    terms = leaf_terms(forest, pooling=pooling, label_shift=label_shift)
    n_classes, n_trees = forest.schema.n_classes, forest.n_trees
    if forest.trees.n_nodes >= MAX_NODES:
        raise ValueError(f"forest: expected fewer than {MAX_NODES} nodes to export, got {forest.trees.n_nodes}")
    built = _tree_nodes(forest)
    nodes, leaves = built["nodes"], built["leaves"]
    ensemble = helper.make_node(
        "TreeEnsembleRegressor", [INPUT_NAME], ["leaf_index"], domain="ai.onnx.ml", name="trees",
        n_targets=n_trees, aggregate_function="SUM", post_transform="NONE",
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_truenodeids=nodes["true"], nodes_falsenodeids=nodes["false"],
        nodes_values=[float(v) for v in nodes["values"]],
        target_treeids=[t for t, _, _ in leaves], target_nodeids=[n for _, n, _ in leaves],
        target_ids=[t for t, _, _ in leaves], target_weights=[float(g) for _, _, g in leaves],
    )
    table = helper.make_tensor("leaf_terms", TensorProto.DOUBLE, terms.node_terms.shape,
                               terms.node_terms.astype(np.float64).ravel().tolist())
    bias = helper.make_tensor("bias", TensorProto.DOUBLE, [n_classes], terms.bias.astype(np.float64).tolist())
    axis = helper.make_tensor("tree_axis", TensorProto.INT64, [1], [1])
    steps = [
        ensemble,
        helper.make_node("Cast", ["leaf_index"], ["leaf_node"], to=TensorProto.INT64),
        helper.make_node("Gather", ["leaf_terms", "leaf_node"], ["tree_terms"], axis=0),
        helper.make_node("ReduceSum", ["tree_terms", "tree_axis"], ["summed"], keepdims=0),
        helper.make_node("Add", ["summed", "bias"], ["scores"]),
    ]
    link = (helper.make_node("Softmax", ["scores"], [OUTPUT_NAME], axis=1) if terms.link == "softmax"
            else helper.make_node("Identity", ["scores"], [OUTPUT_NAME]))
    graph = helper.make_graph(
        [*steps, link], "edprf_forest",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.DOUBLE, [None, forest.schema.n_features])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.DOUBLE, [None, n_classes])],
        initializer=[table, bias, axis],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                    helper.make_opsetid("ai.onnx.ml", ONNX_ML_OPSET)],
                              producer_name="edprf-fl", doc_string=f"pooling={terms.pooling}")
    model.ir_version = 8  # onnxruntime >= 1.14 reads it
    helper.set_model_props(model, {"edprf.encoding": json.dumps(encoding_spec(forest), ensure_ascii=False),
                                   "edprf.pooling": terms.pooling,
                                   "edprf.guarantee": forest.guarantee()})
    onnx.checker.check_model(model)
    return model
