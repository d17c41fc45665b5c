"""Fuzz the coordinator's release checks at scale: mutated, re-signed releases through decode + conformance.

    python benchmarks/fuzz_conformance.py [--inputs 200000] [--seed 0]

Prints how many inputs each layer rejected, how many were accepted, and the wrong
accepts (must be 0), with the wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edprf_core import EDPRFClassifier, load_embedded
from protocol import PartyKeyRegistry, generate_signing_key
from protocol.messages import TrainRequest
from server import CoordinatorConfig
from tests.federation._conformance_fuzz import fuzz_conformance


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    X, y, schema = load_embedded("wall_robot_navigation")
    forest = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, n_trees=2, n_bins=20).fit(X[:500], y[:500]).forest_
    key = generate_signing_key("ed25519")
    request = TrainRequest(
        request_id="run-9/train",
        run_id="run-9",
        schema_fingerprint=schema.fingerprint,
        epsilon=1.0,
        max_depth=3,
        n_trees=2,
        split_mode="binary",
        n_bins=20,
        relation="add-remove",
        seed=-1,
    )
    t0 = time.perf_counter()
    out = fuzz_conformance(
        forest,
        "hospital-a",
        key,
        PartyKeyRegistry({"hospital-a": key.public_key()}),
        request,
        CoordinatorConfig(schema_path="s.toml"),
        args.inputs,
        args.seed,
    )
    print(
        f"{out.inputs} inputs in {time.perf_counter() - t0:.1f} s: rejected by the decoder {out.rejected_by_decoder}, "
        f"by the conformance check {out.rejected_by_conformance}, accepted {out.accepted}, "
        f"wrong accepts {out.wrong_accepts}"
    )
    return 0 if out.wrong_accepts == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
