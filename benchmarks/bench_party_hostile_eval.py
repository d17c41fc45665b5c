"""Peak memory of a party evaluating hostile global models versus an honest one of the same size.

A coordinator (or anyone able to send an evaluate message) chooses the model bytes.
The party bounds its work before decoding: size cap, release fingerprints, embedded
schema size, tree and node counts, all read by :func:`protocol.peek_global_model`.
This measures the Python/numpy peak allocation (``tracemalloc``, which numpy reports
to) of ``Party.evaluate`` on:

- ``honest``: N parties' real releases (binary, depth 6), the reference size B;
- ``many-tiny-trees``: releases of ``--trees`` single-leaf trees each, as many as fit in
  about B bytes (beyond the party's tree cap);
- ``tiny-trees-at-the-tree-cap``: the same, with as many trees as the honest model;
- ``deep-multiway``: one release whose tree arrays claim a deep multiway tree
  (many nodes), about B bytes;
- ``wide-schema``: a model whose embedded schema has 100,000 features, about B bytes
  (releases carry the party's fingerprint, so only the schema size check stops it).

Each case runs in this process after a warm-up; the party's data and policy are the
same.  Prints a Markdown table with peak MiB, the ratio to the honest model (goal
<= 2) and what the party replied.  Run::

    python benchmarks/bench_party_hostile_eval.py [--parties 8] [--trees 50]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import tracemalloc
from pathlib import Path

from client import Party, PartyPolicy, PartySetup, Refusal
from edprf_core import EDPRFClassifier, load_embedded
from protocol import ReleasePolicy, build_global_model, decode_release, encode_release, release_pb2
from protocol.messages import EvaluateRequest


def _party(tmp: Path, parties: int, trees: int, uncapped: bool = False) -> tuple[Party, object]:
    X, y, schema = load_embedded("wall_robot_navigation")
    schema.save(tmp / "schema.toml")
    X.iloc[:2000].assign(Class=y.iloc[:2000].to_numpy()).to_csv(tmp / "data.csv", index=False)
    policy = PartyPolicy(
        party_id="hospital-a",
        lifetime_epsilon_cap=1000.0,
        max_evaluation_epsilon=0.1,
        schema_fingerprint=schema.fingerprint,
        max_evaluation_trees=10**9 if uncapped else parties * trees,
        max_evaluation_nodes=10**9 if uncapped else 5_000_000,
    )
    (tmp / "policy.toml").write_text(policy.to_toml())
    return Party(PartySetup(tmp / "data.csv", tmp / "schema.toml", tmp / "policy.toml", tmp / "ledger.sqlite")), schema


def _honest(schema, parties: int, trees: int) -> tuple[bytes, bytes]:
    X, y, _ = load_embedded("wall_robot_navigation")
    releases = []
    for i in range(parties):
        forest = (
            EDPRFClassifier(
                schema, epsilon=1.0, n_trees=trees, max_depth=6, n_bins=8, random_state=i, residual_pass=False
            )
            .fit(X.iloc[2000:4000], y.iloc[2000:4000])
            .forest_
        )
        raw = encode_release(forest, f"party-{i}")
        releases.append(decode_release(raw, schema, ReleasePolicy()))
    return build_global_model(schema, releases, {"run_id": "bench"}), raw


def _model(
    schema_toml: str,
    release_template: bytes,
    n_trees: int,
    nodes_per_tree: int,
    leaf: bool = False,
    n_releases: int = 1,
) -> bytes:
    """``n_releases`` unsigned releases (distinct party ids) of ``n_trees`` trees each."""
    signed = release_pb2.SignedRelease.FromString(release_template)
    template = release_pb2.Release.FromString(signed.release)
    n = n_trees * nodes_per_tree
    wrapped = []
    for r in range(n_releases):
        release = release_pb2.Release()
        release.CopyFrom(template)
        release.party_id = f"hostile-{r}"
        release.parameters.n_trees = n_trees
        del release.trees.nodes_per_tree[:], release.trees.feature[:], release.trees.split[:]
        del release.trees.first_child[:], release.trees.leaf_class[:]
        release.trees.nodes_per_tree.extend([nodes_per_tree] * n_trees)
        release.trees.feature.extend([-1 if leaf else 0] * n)
        release.trees.split.extend([-1] * n)
        release.trees.first_child.extend([-1 if leaf else 1] * n)
        release.trees.leaf_class.extend([0 if leaf else -1] * n)
        wrapped.append(release_pb2.SignedRelease(release=release.SerializeToString(deterministic=True)))
    model = release_pb2.GlobalModel(format_version=1, schema_toml=schema_toml, releases=wrapped, manifest_json="{}")
    return model.SerializeToString(deterministic=True)


def _wide_schema_toml(n_features: int) -> str:
    lines = ["format = 1", 'name = "wide"', "", "[label]", 'column = "y"', 'classes = ["a", "b"]', ""]
    for i in range(n_features):
        lines += ["[[features]]", f'name = "f{i}"', 'kind = "continuous"', "min = 0.0", "max = 1.0", ""]
    return "\n".join(lines)


def _peak(party: Party, model: bytes, i: int) -> tuple[float, str]:
    gc.collect()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        result = party.evaluate(model, EvaluateRequest(f"bench/{i}", "bench", 0.01, False))
        outcome = f"evaluated (sampler {result['sampler']})"
    except Refusal as exc:
        outcome = f"refused: {exc.reason}"
    peak = tracemalloc.get_traced_memory()[1] - start
    return peak / 2**20, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=8)
    parser.add_argument("--trees", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        party, schema = _party(Path(tmp), args.parties, args.trees)
        honest, template = _honest(schema, args.parties, args.trees)
        size = len(honest)
        toml = schema.to_toml()
        cases = {
            "honest": honest,
            "many-tiny-trees": _model(
                toml, template, args.trees, 1, leaf=True, n_releases=max(1, size // (6 * args.trees + 40))
            ),
            "tiny-trees-at-the-tree-cap": _model(toml, template, args.trees, 1, leaf=True, n_releases=args.parties),
            "deep-multiway": _model(toml, template, 1, max(1, size // 4)),
            "wide-schema": _model(_wide_schema_toml(100_000), template, 1, 1),
        }
        tracemalloc.start()
        _peak(party, honest, 0)  # warm-up: imports, caches
        rows = []
        base = None
        for i, (name, model) in enumerate(cases.items(), start=1):
            peak, outcome = _peak(party, model, i)
            base = peak if base is None else base
            rows.append((name, len(model), peak, peak / base, outcome))
        (Path(tmp) / "uncapped").mkdir()
        uncapped, _ = _party(Path(tmp) / "uncapped", args.parties, args.trees, uncapped=True)
        peak, outcome = _peak(uncapped, cases["many-tiny-trees"], 99)
        rows.append(
            (
                "many-tiny-trees, tree/node caps off (what the caps prevent)",
                len(cases["many-tiny-trees"]),
                peak,
                peak / base,
                outcome,
            )
        )
        tracemalloc.stop()
    print("| model | bytes | peak MiB | ratio to honest | party's reply |")
    print("|---|---|---|---|---|")
    for name, n, peak, ratio, outcome in rows:
        print(f"| {name} | {n:,} | {peak:.1f} | {ratio:.2f} | {outcome} |")


if __name__ == "__main__":
    main()
