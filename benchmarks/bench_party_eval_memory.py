"""Peak memory of a party evaluating the worst global models inside its default limits.

A coordinator (or anyone able to send an evaluate message) chooses the model bytes.  The
party's default limits (50 trees, depth 8 and 64 bins per release; 5,000 trees, 10**6
nodes, 512 releases and 32 MiB per model) admit shapes an honest federation never sends: full depth-8
trees on the finest grid with label leaves (the shape that took a party to 7 GB before
prediction was compiled in bounded blocks), leaf counts at their maximum, thousands of
single-leaf trees, one tree per release (up to the 512-release cap: the slow shape, each
release costs milliseconds to decode whatever its size), full multiway trees.  Each case is
compared with an honest model of about the same size in bytes and the same leaf output (goal:
memory ratio <= 2, time within the party's work estimate): real releases of the federation's
default request (binary, ``leaf = counts`` and ``label``, depth 8, 20 bins) from
``--trees``-tree parties, as many as fit.

Every evaluation runs in a fresh subprocess (after a warm-up evaluation of a small honest
model there); the figure is the growth of the process's peak resident set
(``VmHWM`` of ``/proc/self/status``, reset just before) during ``Party.evaluate``, next to the party's
estimate from the header (``client._evaluation_cost``, checked before decoding), which
must bound it.  Prints a Markdown table; ``--out`` also writes it.  Run::

    python benchmarks/bench_party_eval_memory.py [--size-mib 2.2] [--trees 50] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from client import PartyPolicy
from edprf_core import EDPRFClassifier, load_embedded
from edprf_core.encoding import FeatureGrid
from protocol import encode_release, release_pb2

DATA = "wall_robot_navigation"


def _setup_party(tmp: Path):
    from client import Party, PartySetup

    X, y, schema = load_embedded(DATA)
    schema.save(tmp / "schema.toml")
    X.iloc[:2000].assign(Class=y.iloc[:2000].to_numpy()).to_csv(tmp / "data.csv", index=False)
    policy = PartyPolicy(party_id="bench-party", lifetime_epsilon_cap=1000.0, schema_fingerprint=schema.fingerprint)
    (tmp / "policy.toml").write_text(policy.to_toml())
    return Party(PartySetup(tmp / "data.csv", tmp / "schema.toml", tmp / "policy.toml", tmp / "ledger.sqlite"))


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {key}")


def _reset_peak() -> int:
    """Reset the process's peak resident set (Linux: ``5`` to ``/proc/self/clear_refs``); return the current one."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS")


def _child(model_path: Path, warm_path: Path) -> None:
    """Evaluate one model in this (fresh) process and print what it cost, as JSON."""
    from client import Refusal
    from client._evaluation_cost import evaluation_cost
    from protocol import peek_global_model
    from protocol.messages import EvaluateRequest

    with tempfile.TemporaryDirectory() as tmp:
        party = _setup_party(Path(tmp))
        party.evaluate(warm_path.read_bytes(), EvaluateRequest("warm-up", "bench", 0.01, False))
        model = model_path.read_bytes()
        header = peek_global_model(model, party.policy.max_evaluation_model_bytes)
        cost = evaluation_cost(header, party.schema, party.policy)
        estimate = cost.memory_bytes
        base = _reset_peak()
        start = time.perf_counter()
        try:
            result = party.evaluate(model, EvaluateRequest("bench", "bench", 0.01, False))
            outcome = f"evaluated ({result['sampler']})"
        except Refusal as exc:
            outcome = f"refused: {exc.reason}"
        seconds = time.perf_counter() - start
        peak = _status_kib("VmHWM")
    print(
        json.dumps(
            {
                "extra_mib": (peak - base) / 1024,
                "estimate_mib": estimate / 2**20,
                "work_s": cost.work_units / 1e6,
                "seconds": seconds,
                "outcome": outcome,
                "bytes": header.n_bytes,
                "releases": header.n_releases,
                "trees": header.n_trees,
                "nodes": header.n_nodes,
            }
        )
    )


# ------------------------------------------------------------------ models
def _honest_release(schema, X, y, trees: int, leaf: str, party: str, seed: int) -> bytes:
    forest = (
        EDPRFClassifier(
            schema,
            epsilon=1.0,
            n_trees=trees,
            max_depth=8,
            n_bins=20,
            leaf=leaf,
            random_state=seed,
            residual_pass=False,
        )
        .fit(X, y)
        .forest_
    )
    return encode_release(forest, party)


def _honest_model(schema_toml: str, big: bytes, small: bytes, target: int) -> bytes:
    """Copies (distinct party ids) of one big honest release, then small ones, up to ``target`` bytes."""
    releases, size = [], 0
    for template in (big, small) if len(big) <= target else (small,):
        while size + len(template) <= target or not releases:
            releases.append(_renamed(template, f"honest-{len(releases)}"))
            size += len(template)
            if template is small and size >= target:
                break
    return _wrap(schema_toml, releases)


def _renamed(signed_bytes: bytes, party: str) -> release_pb2.SignedRelease:
    release = release_pb2.Release.FromString(release_pb2.SignedRelease.FromString(signed_bytes).release)
    release.party_id = party
    return release_pb2.SignedRelease(release=release.SerializeToString(deterministic=True))


def _wrap(schema_toml: str, releases: list) -> bytes:
    return release_pb2.GlobalModel(
        format_version=1, schema_toml=schema_toml, releases=releases, manifest_json="{}"
    ).SerializeToString(deterministic=True)


def _full_binary(depth: int, n_features: int, n_codes: np.ndarray, n_classes: int, rng) -> tuple:
    n = 2 ** (depth + 1) - 1
    internal = np.arange(n) < 2**depth - 1
    feature = np.where(internal, rng.integers(0, n_features, n), -1)
    split = np.where(internal, rng.integers(1, n_codes[np.maximum(feature, 0)]), -1)
    first = np.where(internal, 2 * np.arange(n) + 1, -1)
    return feature, split, first, np.where(internal, -1, rng.integers(0, n_classes, n))


def _full_multiway(depth: int, n_codes: np.ndarray, n_classes: int) -> tuple:
    """Full multiway tree splitting on feature ``level`` at each level (its codes children each)."""
    feature, first, sizes = [], [], [1]
    for level in range(depth + 1):
        count = sizes[-1]
        if level < depth:
            k = int(n_codes[level])
            start = sum(sizes)
            feature += [level] * count
            first += [start + i * k for i in range(count)]
            sizes.append(count * k)
        else:
            feature += [-1] * count
            first += [-1] * count
    feature, first = np.array(feature), np.array(first)
    leaf = np.where(feature < 0, 0, -1)
    return feature, np.full(feature.size, -1), first, leaf


def _hostile_release(
    template: bytes,
    party: str,
    trees: list[tuple],
    *,
    max_depth: int,
    n_bins: int,
    split_mode: str,
    counts: int | None,
    n_classes: int,
) -> release_pb2.SignedRelease:
    release = release_pb2.Release.FromString(release_pb2.SignedRelease.FromString(template).release)
    release.party_id = party
    p = release.parameters
    p.n_trees, p.max_depth, p.n_bins = len(trees), max_depth, n_bins
    p.split_mode = release_pb2.SPLIT_MODE_MULTIWAY if split_mode == "multiway" else release_pb2.SPLIT_MODE_BINARY
    p.leaf = release_pb2.LEAF_OUTPUT_COUNTS if counts is not None else release_pb2.LEAF_OUTPUT_LABEL
    t = release.trees
    for name in ("nodes_per_tree", "feature", "split", "first_child", "leaf_class", "leaf_counts"):
        del getattr(t, name)[:]
    for feature, split, first, leaf in trees:
        t.nodes_per_tree.append(len(feature))
        t.feature.extend(feature.tolist())
        t.split.extend(split.tolist())
        t.first_child.extend(first.tolist())
        if counts is None:
            t.leaf_class.extend(leaf.tolist())
        else:
            t.leaf_class.extend(np.where(feature < 0, 0, -1).tolist())
            t.leaf_counts.extend([counts] * (n_classes * int((feature < 0).sum())))
    return release_pb2.SignedRelease(release=release.SerializeToString(deterministic=True))


def _hostile_model(schema, template: bytes, target: int, case: str) -> bytes:
    rng = np.random.default_rng(0)
    n_classes, n_features = schema.n_classes, len(schema.features)
    codes64 = np.asarray(FeatureGrid.from_schema(schema, 64).n_codes)
    shape = {
        "full depth-8 binary trees, 64 bins, label leaves": (50, "full", None, "binary"),
        "full depth-8 binary trees, 64 bins, counts 2**31-1": (50, "full", 2**31 - 1, "binary"),
        "single-leaf trees (5,000, the tree cap)": (50, "leaf", None, "binary"),
        "one full depth-8 tree per release": (1, "full", None, "binary"),
        "one single-leaf tree per release (512, the parts cap)": (1, "leaf", None, "binary"),
        "full multiway depth-2 trees, 64 bins": (50, "multiway", None, "multiway"),
    }[case]
    per_release, kind, counts, mode = shape
    releases, size, total_trees = [], 0, 0
    limits = PartyPolicy(party_id="limits")
    while size < target and total_trees + per_release <= limits.max_evaluation_trees:
        if len(releases) >= limits.max_evaluation_parts:
            break
        if kind == "full":
            trees = [_full_binary(8, n_features, codes64, n_classes, rng) for _ in range(per_release)]
        elif kind == "leaf":
            trees = [tuple(np.array([v]) for v in (-1, -1, -1, 0))] * per_release
        else:
            trees = [_full_multiway(2, codes64, n_classes)] * per_release
        signed = _hostile_release(
            template,
            f"hostile-{len(releases)}",
            trees,
            max_depth=8 if mode == "binary" else 2,
            n_bins=64,
            split_mode=mode,
            counts=counts,
            n_classes=n_classes,
        )
        nodes = sum(len(t[0]) for t in trees)
        if sum(len(r.release) for r in releases) and nodes + _nodes(releases) > 1_000_000:
            break
        releases.append(signed)
        size += len(signed.release)
        total_trees += per_release
    return _wrap(schema.to_toml(), releases)


def _nodes(releases: list) -> int:
    return sum(len(release_pb2.Release.FromString(r.release).trees.feature) for r in releases)


# -------------------------------------------------------------------- main
def _run(model: bytes, warm: Path, tmp: Path, name: str) -> dict:
    path = tmp / f"{name}.model"
    path.write_bytes(model)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), str(warm)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=2.2, help="target model size (default 2.2 MiB)")
    parser.add_argument("--trees", type=int, default=50, help="trees per honest party (default 50)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    X, y, schema = load_embedded(DATA)
    Xt, yt = X.iloc[2000:4000], y.iloc[2000:4000]
    target = int(args.size_mib * 2**20)
    toml = schema.to_toml()
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        small_counts = _honest_release(schema, Xt, yt, 2, "counts", "warm", 1)
        warm = tmp / "warm.model"
        warm.write_bytes(_wrap(toml, [_renamed(small_counts, "warm")]))
        honest = {
            leaf: (
                _honest_release(schema, Xt, yt, args.trees, leaf, "h", 2),
                _honest_release(schema, Xt, yt, 2, leaf, "h", 3),
            )
            for leaf in ("counts", "label")
        }
        cases = [
            "full depth-8 binary trees, 64 bins, label leaves",
            "full depth-8 binary trees, 64 bins, counts 2**31-1",
            "single-leaf trees (5,000, the tree cap)",
            "one full depth-8 tree per release",
            "one single-leaf tree per release (512, the parts cap)",
            "full multiway depth-2 trees, 64 bins",
        ]
        for i, case in enumerate(cases):
            model = _hostile_model(schema, honest["label"][1], target, case)
            hostile = _run(model, warm, tmp, f"hostile-{i}")
            references = {
                leaf: _run(_honest_model(toml, big, small, hostile["bytes"]), warm, tmp, f"honest-{i}-{leaf}")
                for leaf, (big, small) in honest.items()
            }
            same_leaf = references["counts" if "counts" in case else "label"]
            rows.append(
                (
                    case,
                    hostile,
                    references["counts"],
                    references["label"],
                    hostile["extra_mib"] / max(same_leaf["extra_mib"], 1.0),
                )
            )
    lines = [
        (
            f"Party evaluation memory, {DATA} party (2,000 rows, 400 held out), default policy; "
            f"honest parties of {args.trees} trees (depth 8, 20 bins).  Peak RSS growth during "
            "Party.evaluate in a fresh process; estimate = the party's bound from the header."
        ),
        "",
        (
            "| model | bytes | releases | trees | nodes | peak MiB | estimate MiB | seconds | work estimate s "
            "| honest counts MiB (bytes) | honest label MiB (bytes) | honest s, same leaf output "
            "| ratio to honest, same leaf output | reply |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, h, rc, rl, ratio in rows:
        same = rc if "counts" in case else rl
        lines.append(
            f"| {case} | {h['bytes']:,} | {h['releases']} | {h['trees']} | {h['nodes']:,} | "
            f"{h['extra_mib']:.0f} | {h['estimate_mib']:.0f} | {h['seconds']:.1f} | {h['work_s']:.1f} | "
            f"{rc['extra_mib']:.0f} ({rc['bytes']:,}) | {rl['extra_mib']:.0f} ({rl['bytes']:,}) | "
            f"{same['seconds']:.1f} | {ratio:.2f} | {h['outcome']} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
