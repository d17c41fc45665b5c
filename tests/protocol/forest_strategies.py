"""Hypothesis strategies: random public schemas and random valid DP forests on them.

Trees are generated directly as flat arrays in the breadth-first layout that
``edprf_core`` documents, independently of the builder, so that the codec is
tested on shapes the builder may never produce (every split candidate, every
class and feature index; in research forests, ``dp = False``, partial trees,
leaves at any depth and single-node trees).
"""

from __future__ import annotations

from hypothesis import strategies as st

from edprf_core import CategoricalFeature, ContinuousFeature, DPForest, LabelSpec, Schema, TrainingParameters
from edprf_core.encoding import FeatureGrid
from edprf_core.forest import ForestArrays, max_tree_nodes

SPLIT_MODES = ("binary", "multiway")
MAX_NODES_PER_TREE = 80


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    """1-5 features (continuous with or without declared edges, categorical) and 2-5 classes."""
    features = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(("continuous", "edges", "categorical")))
        if kind == "categorical":
            k = draw(st.integers(2, 6))
            features.append(CategoricalFeature(f"c{i}", tuple(f"v{j}" for j in range(k))))
        elif kind == "edges":
            edges = draw(st.lists(st.integers(1, 99), min_size=1, max_size=5, unique=True))
            features.append(ContinuousFeature(f"x{i}", 0.0, 100.0, edges=tuple(sorted(float(e) for e in edges))))
        else:
            features.append(ContinuousFeature(f"x{i}", -1.0, 1.0))
    classes = tuple(f"k{j}" for j in range(draw(st.integers(2, 5))))
    return Schema(features=tuple(features), label=LabelSpec("y", classes), name="hypothesis")


def _draw_tree(draw: st.DrawFn, grid: FeatureGrid, split_mode: str, max_depth: int, n_classes: int, dp: bool) -> dict:
    """One tree in breadth-first order: node i's children are appended when node i is visited.

    Every split is a candidate on its path (it divides the codes the path still admits on its feature in two,
    or, multiway, uses a feature of two codes or more once per path), as the builder's are.  A ``dp`` tree
    stops a path above ``max_depth`` only when no candidate is left (the builder's rule, checked by the
    decoder); a research (``dp = False``, ``stop_when_pure``) tree may stop anywhere.
    """
    n_features = len(grid.n_codes)
    fields: dict[str, list[int]] = {"feature": [], "split": [], "first_child": [], "leaf_class": []}
    # (depth, codes the path admits per feature) of each node, in BFS order; multiway: a used feature admits one
    nodes = [(0, tuple(frozenset(range(k)) for k in grid.n_codes))]
    i = 0
    while i < len(nodes):
        depth, admits = nodes[i]
        i += 1
        candidates = [f for f in range(n_features) if len(admits[f]) >= 2]
        if depth < max_depth and candidates and (dp or draw(st.booleans())):
            f = draw(st.sampled_from(candidates))
            codes = sorted(admits[f])
            if split_mode == "binary":
                if grid.is_categorical[f]:
                    split = draw(st.sampled_from(codes))
                    left = frozenset({split})
                else:
                    split = draw(st.integers(codes[0] + 1, codes[-1]))
                    left = frozenset(c for c in codes if c < split)
                children = [left, admits[f] - left]
            else:
                split, children = -1, [frozenset({0})] * grid.n_codes[f]
            node = (f, split, len(nodes), -1)
            nodes.extend((depth + 1, admits[:f] + (child,) + admits[f + 1 :]) for child in children)
        else:
            node = (-1, -1, -1, draw(st.integers(0, n_classes - 1)))
        for name, value in zip(fields, node):
            fields[name].append(value)
    return fields


@st.composite
def training_parameters(
    draw: st.DrawFn, split_mode: str, max_depth: int, n_trees: int, n_bins: int, dp: bool = True
) -> TrainingParameters:
    relation = draw(st.sampled_from(("add-remove", "replace-one")))
    return TrainingParameters(
        epsilon=draw(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)),
        relation=relation,
        split_mode=split_mode,
        max_depth=max_depth,
        n_trees=n_trees,
        n_bins=n_bins,
        exploit_monotonicity=relation == "add-remove",  # the wire carries the production configuration only
        dp=dp,
        seeded=draw(st.booleans()),
        sampler=draw(st.sampled_from(("numpy", "exact"))),
        leaf="label",
    )


@st.composite
def random_forests(draw: st.DrawFn, split_mode: str | None = None) -> DPForest:
    """A valid single-part DPForest with random trees (1-4 trees, depth 1-5; multiway: at most
    ``MAX_NODES_PER_TREE`` nodes per tree at the depth drawn).  About half are research forests
    (``dp = False``) whose paths may stop at any depth."""
    schema = draw(schemas())
    mode = split_mode or draw(st.sampled_from(SPLIT_MODES))
    n_bins = draw(st.integers(2, 6))
    max_depth = draw(st.integers(1, 5))
    grid = FeatureGrid.from_schema(schema, n_bins)
    while max_depth > 1 and max_tree_nodes(grid.n_codes, mode, max_depth) > MAX_NODES_PER_TREE:
        max_depth -= 1
    n_trees = draw(st.integers(1, 4))
    dp = draw(st.booleans())
    trees = [_draw_tree(draw, grid, mode, max_depth, schema.n_classes, dp) for _ in range(n_trees)]
    params = draw(training_parameters(mode, max_depth, n_trees, n_bins, dp))
    return DPForest(
        schema=schema,
        grid_bins=n_bins,
        split_mode=mode,
        trees=ForestArrays.from_trees(trees),
        parts=(("local", params, n_trees),),
    )
