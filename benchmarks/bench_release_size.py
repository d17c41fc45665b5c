"""Size of an ``edprf.v1`` release on the wire: bytes per node and per tree.

Fits depth-6 forests of 35 trees (ε = 1, 5 bins) in both split modes on the
embedded datasets, encodes each as an unsigned and as a signed release, and
prints a Markdown table of raw and gzip-compressed sizes.  Run::

    python benchmarks/bench_release_size.py [--trees 35] [--depth 6] [--bins 5]

Privacy: the sizes depend only on the public schema, the parameters and the
mechanisms' outputs (tree shapes are fixed by depth and grid), not on counts.
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections.abc import Sequence
from dataclasses import dataclass

from edprf_core import EDPRFClassifier, load_embedded
from protocol import INSPECTION_POLICY, decode_release, encode_release, generate_signing_key

DATASETS = ("wall_robot_navigation", "bank_marketing")
SPLIT_MODES = ("binary", "multiway")


@dataclass(frozen=True)
class SizeRow:
    dataset: str
    split_mode: str
    n_trees: int
    n_nodes: int
    raw_bytes: int
    gzip_bytes: int
    signature_bytes: int
    encode_seconds: float
    decode_seconds: float

    def cells(self) -> list[str]:
        return [
            self.dataset,
            self.split_mode,
            str(self.n_trees),
            f"{self.n_nodes:,}",
            f"{self.raw_bytes:,}",
            f"{self.raw_bytes / self.n_nodes:.2f}",
            f"{self.raw_bytes / self.n_trees:,.0f}",
            f"{self.gzip_bytes:,}",
            f"{self.gzip_bytes / self.n_nodes:.2f}",
            f"{self.gzip_bytes / self.n_trees:,.0f}",
            f"+{self.signature_bytes}",
            f"{self.encode_seconds * 1e3:.0f} / {self.decode_seconds * 1e3:.0f}",
        ]


HEADER = [
    "dataset",
    "split",
    "trees",
    "nodes",
    "raw B",
    "raw B/node",
    "raw B/tree",
    "gzip B",
    "gzip B/node",
    "gzip B/tree",
    "Ed25519 signed",
    "encode / decode ms",
]


def measure(dataset: str, split_mode: str, n_trees: int, depth: int, n_bins: int, seed: int) -> SizeRow:
    X, y, schema = load_embedded(dataset)
    forest = (
        EDPRFClassifier(
            schema,
            epsilon=1.0,
            n_trees=n_trees,
            max_depth=depth,
            split_mode=split_mode,
            n_bins=n_bins,
            random_state=seed,
            residual_pass=False,  # a party's release: histograms only
        )
        .fit(X, y)
        .forest_
    )
    start = time.perf_counter()
    raw = encode_release(forest, "party-1")
    encode_seconds = time.perf_counter() - start
    signed = encode_release(forest, "party-1", generate_signing_key("ed25519"))
    start = time.perf_counter()
    decode_release(raw, schema, INSPECTION_POLICY)
    decode_seconds = time.perf_counter() - start
    return SizeRow(
        dataset,
        split_mode,
        forest.n_trees,
        forest.trees.n_nodes,
        len(raw),
        len(gzip.compress(raw, compresslevel=9, mtime=0)),
        len(signed) - len(raw),
        encode_seconds,
        decode_seconds,
    )


def markdown(rows: Sequence[SizeRow]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=35)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--bins", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = [measure(d, m, args.trees, args.depth, args.bins, args.seed) for d in DATASETS for m in SPLIT_MODES]
    print(
        f"Release sizes: {args.trees} trees, depth {args.depth}, {args.bins} bins, epsilon 1 "
        "(raw = SignedRelease bytes, unsigned; gzip level 9)\n"
    )
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
