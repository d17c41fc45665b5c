"""Tree shapes: a DP release stops a path above its depth limit only when no split candidate is left on it.

The builder (:mod:`edprf_core._builder`) makes a node a leaf only at the last layer or when its path has
exhausted every candidate (binary: every feature's codes the path admits down to one; multiway: every
feature of two codes or more used), and each split is a candidate on its path.  The decoder checks both
(:mod:`protocol._structure`): honest releases of every configuration pass, through the real party path
(:class:`client.Party`, then the coordinator's decoder and conformance check), and forged shapes fail with
``bad_structure``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from client import Party, PartyPolicy, PartySetup
from edprf_core import CategoricalFeature, ContinuousFeature, EDPRFClassifier, LabelSpec, Schema, load_embedded
from protocol import (
    INSPECTION_POLICY,
    InvalidRelease,
    PartyKeyRegistry,
    ReleasePolicy,
    decode_release,
    encode_release,
    generate_signing_key,
)
from protocol import release_pb2 as pb
from protocol.messages import TrainRequest
from server import CoordinatorConfig
from server._conformance import request_mismatch
from tests.forged_releases import REFUSED_ATTACKS, forge_release_bytes

from .tampering import replace_trees, tamper

COORDINATOR = ReleasePolicy(max_epsilon=1.0, max_depth=12, max_n_trees=50, max_n_bins=64)
CFG = CoordinatorConfig(schema_path="s.toml", require_exact_sampling=False)  # seeded research runs too


def _schema(*kinds: str) -> Schema:
    """``num`` (equal-width bins), ``edges<e>`` (e declared edges: e + 1 codes), ``cat<k>`` (k categories)."""
    features = []
    for i, kind in enumerate(kinds):
        if kind.startswith("cat"):
            features.append(CategoricalFeature(f"c{i}", tuple(f"v{j}" for j in range(int(kind[3:])))))
        elif kind.startswith("edges"):
            edges = tuple(float(10 * (j + 1)) for j in range(int(kind[5:])))
            features.append(ContinuousFeature(f"x{i}", 0.0, 100.0, edges=edges))
        else:
            features.append(ContinuousFeature(f"x{i}", 0.0, 100.0))
    return Schema(features=tuple(features), label=LabelSpec("y", ("no", "yes", "maybe")), name="shapes")


SCHEMAS = {
    "one-continuous": _schema("num"),
    "one-binary-category": _schema("cat2"),
    "two-few-codes": _schema("cat3", "edges1"),
    "three-mixed": _schema("num", "cat2", "edges2"),
}


def _rows(schema: Schema, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {
        f.name: rng.choice(list(f.categories), n) if isinstance(f, CategoricalFeature) else rng.uniform(0, 100, n)
        for f in schema.features
    }
    y = np.where(cols[schema.features[0].name] == schema.features[0].name, "no", rng.choice(["no", "yes", "maybe"], n))
    return pd.DataFrame(cols).assign(y=y)


def _party(tmp_path, name: str, schema: Schema, n_rows: int, declared_rows: int = 0) -> Party:
    folder = tmp_path / name
    folder.mkdir()
    schema.save(folder / "schema.toml")
    _rows(schema, n_rows, seed=n_rows).to_csv(folder / "data.csv", index=False)
    policy = PartyPolicy(
        party_id=name,
        lifetime_epsilon_cap=1000.0,
        max_release_epsilon=1.0,
        max_depth=12,
        allow_seeded_randomness=True,
        declared_rows=declared_rows,
        schema_fingerprint=schema.fingerprint,
    )
    (folder / "policy.toml").write_text(policy.to_toml())
    setup = PartySetup(folder / "data.csv", folder / "schema.toml", folder / "policy.toml", folder / "ledger.sqlite")
    return Party(setup)


def _request(schema: Schema, i: int, **kw) -> TrainRequest:
    args = {
        "request_id": f"run1/{i}/train",
        "run_id": "run1",
        "schema_fingerprint": schema.fingerprint,
        "epsilon": 1.0,
        "max_depth": 4,
        "n_trees": 3,
        "split_mode": "binary",
        "n_bins": 2,
        "relation": "add-remove",
        "seed": i,
    }
    args.update(kw)
    return TrainRequest(**args)


def _accepted(payload: bytes, schema: Schema, request: TrainRequest):
    release = decode_release(payload, schema, COORDINATOR)
    assert request_mismatch(release, request, CFG) is None
    return release


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_honest_releases_of_every_configuration_are_accepted(tmp_path, name):
    """Few features and few codes (paths exhaust early), depths beyond what the features support, both split
    modes, 2 and 3 bins, fixed and automatic depths (declared size and DP count), counts and labels, with and
    without a marginals part: the party's releases all pass the coordinator's decoder and conformance check."""
    schema = SCHEMAS[name]
    parties = {
        "small": _party(tmp_path, "small", schema, 40),
        "big": _party(tmp_path, "big", schema, 600),
        "declared": _party(tmp_path, "declared", schema, 200, declared_rows=100_000),
    }
    early = 0
    grid = itertools.product(("binary", "multiway"), (2, 3), (1, 3, 7), ("fixed", "auto"), ("counts", "label"))
    for i, (mode, bins, depth, rule, leaf) in enumerate(grid, start=1):
        party = parties[("small", "big", "declared")[i % 3]]
        share = 0.3 if i % 4 == 0 else 0.0
        request = _request(
            schema,
            i,
            split_mode=mode,
            n_bins=bins,
            max_depth=depth,
            depth_rule=rule,
            leaf=leaf,
            marginals_share=share,
            marginals_bins=bins if share else 0,
        )
        release = _accepted(party.train(request), schema, request)
        p = release.params
        assert p.max_depth == depth if rule == "fixed" else p.max_depth <= depth
        trees = release.forest.trees
        depths = trees.depths_and_parents()[0]
        early += int(np.count_nonzero((trees.feature < 0) & (depths < p.max_depth)))
    assert early > 0  # some paths did exhaust their candidates above the depth limit, and were accepted


def test_honest_releases_with_the_exact_sampler_and_a_real_schema_are_accepted(tmp_path):
    X, y, schema = load_embedded("wall_robot_navigation")
    folder = tmp_path / "wall"
    folder.mkdir()
    schema.save(folder / "schema.toml")
    X.iloc[:800].assign(Class=y.iloc[:800].to_numpy()).to_csv(folder / "data.csv", index=False)
    policy = PartyPolicy(party_id="wall", lifetime_epsilon_cap=100.0, schema_fingerprint=schema.fingerprint)
    (folder / "policy.toml").write_text(policy.to_toml())
    party = Party(PartySetup(folder / "data.csv", folder / "schema.toml", folder / "policy.toml", folder / "l.sqlite"))
    for i, (mode, bins, rule) in enumerate([("binary", 2, "fixed"), ("multiway", 2, "auto"), ("binary", 3, "auto")]):
        request = _request(schema, i, seed=-1, split_mode=mode, n_bins=bins, max_depth=3, depth_rule=rule)
        assert _accepted(party.train(request), schema, request).params.sampler == "exact"
    tiny = _party(tmp_path, "tiny", SCHEMAS["one-binary-category"], 30)
    request = _request(SCHEMAS["one-binary-category"], 9, seed=-1, max_depth=6, leaf="label")
    trees = _accepted(tiny.train(request), SCHEMAS["one-binary-category"], request).forest.trees
    assert np.array_equal(np.diff(trees.tree_offsets), [3, 3, 3])  # one split exhausts the only feature


@pytest.mark.parametrize("attack", REFUSED_ATTACKS)
def test_a_signed_root_only_release_under_a_fixed_depth_is_refused(tmp_path, attack):
    """The reviewer's forgery: one leaf per tree, counts 2**31 - 1, signed by the party's registered key."""
    schema = SCHEMAS["three-mixed"]
    key = generate_signing_key("ed25519")
    registry = PartyKeyRegistry({"big": key.public_key()})
    request = _request(schema, 1, max_depth=4)
    genuine = _party(tmp_path, "big", schema, 600).train(request)
    forged = forge_release_bytes(genuine, schema, attack, signing_key=key)
    opened = pb.Release.FromString(pb.SignedRelease.FromString(forged).release)
    assert list(opened.trees.nodes_per_tree) == [1, 1, 1] and max(opened.trees.leaf_counts) == 2**31 - 1
    with pytest.raises(InvalidRelease) as refused:
        decode_release(forged, schema, COORDINATOR, registry)
    assert refused.value.reason == "bad_structure"
    assert "tree 0, node 0: a leaf at depth 0 of a depth-4 tree with split candidates left on its path" in str(
        refused.value
    )
    with pytest.raises(InvalidRelease, match="a leaf at depth 0 of a depth-4 tree"):  # inspection tools too
        decode_release(forged, schema, INSPECTION_POLICY)


@pytest.fixture(scope="module")
def genuine():
    """A genuine binary release (depth 4) on a schema of one 5-code continuous feature and one 3-category one."""
    schema = _schema("edges4", "cat3")
    rows = _rows(schema, 300, seed=1)
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=4, n_bins=2, random_state=0)
        .fit(rows.drop(columns="y"), rows["y"])
        .forest_
    )
    return schema, encode_release(forest, "p")


def _one_tree(nodes: list[tuple[int, int, int, int]], leaf_counts: bool = True) -> dict[str, list[int]]:
    """(feature, split, first_child, leaf_class) per node, breadth-first."""
    arrays = {"nodes_per_tree": [len(nodes)]}
    for k, name in enumerate(("feature", "split", "first_child", "leaf_class")):
        arrays[name] = [n[k] for n in nodes]
    arrays["leaf_counts"] = [1, 0, 0] * sum(n[0] < 0 for n in nodes) if leaf_counts else []
    return arrays


def _refusal(schema, data, nodes) -> str:
    with pytest.raises(InvalidRelease) as refused:
        decode_release(tamper(data, lambda r: replace_trees(r, _one_tree(nodes))), schema, COORDINATOR)
    assert refused.value.reason == "bad_structure"
    return refused.value.message


LEAF = (-1, -1, -1, 0)


def test_an_early_leaf_is_refused_wherever_a_candidate_is_left(genuine):
    schema, data = genuine
    # depth 1 leaf after splitting x0 (codes 0..4) at 1: the left child admits x0's code 0 only, c1 is left
    message = _refusal(schema, data, [(0, 1, 1, -1), (-1, -1, -1, 0), (-1, -1, -1, 0)])
    assert message.endswith(
        "release: tree 0, node 1: a leaf at depth 1 of a depth-4 tree with split candidates left on its path "
        "(1 feature(s) it can still split)"
    )
    # a path with every candidate used may stop early; its sibling may not.  x0 < 1 leaves code 0 only; the
    # category c1 == 0 fixes c1: node 3 (x0 < 1, c1 == 0) has no candidate left, node 4 (c1 != 0) has c1's 1, 2
    nodes = [(0, 1, 1, -1), (1, 0, 3, -1), (0, 2, 5, -1), LEAF, LEAF] + [LEAF] * 2
    assert "tree 0, node 4: a leaf at depth 2" in _refusal(schema, data, nodes)


def test_a_split_that_is_no_candidate_on_its_path_is_refused(genuine):
    schema, data = genuine
    # x0 < 2 then, on the left (codes 0, 1), x0 < 3: the left child's path admits nothing new
    assert "tree 0, node 1: a split on feature 0 at value 3 that does not divide" in _refusal(
        schema, data, [(0, 2, 1, -1), (0, 3, 3, -1), LEAF, LEAF, LEAF]
    )
    # c1 != 0 then c1 == 0 again: category 0 is excluded on that path
    assert "tree 0, node 2: a split on feature 1 at value 0" in _refusal(
        schema, data, [(1, 0, 1, -1), LEAF, (1, 0, 3, -1), LEAF, LEAF]
    )


def test_a_research_release_may_stop_anywhere_but_only_with_its_dp_flag_cleared(genuine):
    schema, data = genuine
    nodes = [(0, 1, 1, -1), LEAF, LEAF]

    def research(release: pb.Release) -> None:
        replace_trees(release, _one_tree(nodes))
        release.parameters.dp = False

    allowed = ReleasePolicy(max_epsilon=1.0, allow_non_dp=True)
    assert decode_release(tamper(data, research), schema, allowed).forest.trees.n_nodes == 3
    with pytest.raises(InvalidRelease) as refused:
        decode_release(tamper(data, research), schema, COORDINATOR)
    assert refused.value.reason == "not_dp"


def test_multiway_leaves_stop_early_only_when_every_feature_is_used():
    schema = _schema("edges1", "cat2")
    rows = _rows(schema, 200, seed=2)
    forest = (
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=5, n_bins=2, split_mode="multiway", random_state=0)
        .fit(rows.drop(columns="y"), rows["y"])
        .forest_
    )
    data = encode_release(forest, "p")
    assert np.diff(decode_release(data, schema, COORDINATOR).forest.trees.tree_offsets).tolist() == [7]
    nodes = [(0, -1, 1, -1), (1, -1, 3, -1), LEAF, LEAF, LEAF]
    assert "tree 0, node 2: a leaf at depth 1 of a depth-5 tree" in _refusal(schema, data, nodes)


def test_the_check_stays_vectorized_on_large_forests():
    """50 full binary trees of depth 10 (102,350 nodes) check in well under a second per pass."""
    import time

    from edprf_core.encoding import FeatureGrid
    from edprf_core.forest import ForestArrays
    from protocol._structure import check_trees

    schema = _schema(*["num"] * 12)
    grid = FeatureGrid.from_schema(schema, 64)
    depth, n_trees = 10, 50
    rng = np.random.default_rng(0)
    size = 2 ** (depth + 1) - 1
    local = np.arange(size)
    internal = local < 2**depth - 1
    trees = []
    for _ in range(n_trees):
        # every split on a feature of its own level: thresholds never repeat on a path (12 features, depth 10)
        level = np.floor(np.log2(local + 1)).astype(int)
        trees.append(
            {
                "feature": np.where(internal, level, -1),
                "split": np.where(internal, rng.integers(1, 64, size), -1),
                "first_child": np.where(internal, 2 * local + 1, -1),
                "leaf_class": np.where(internal, -1, 0),
            }
        )
    forest = ForestArrays.from_trees(trees)
    start = time.perf_counter()
    check_trees(forest, grid, 3, "binary", depth)
    assert time.perf_counter() - start < 5.0
