"""A small global model, its parties' keys and a data file with hostile rows, written to a directory.

Used by the tests of ``edprf predict`` / ``edprf evaluate`` and by CI's slim-install step, which has
no test extras: run it as ``python -m tests.model_use.model_files OUT_DIR`` (needs only the slim install).
The forests are seeded (reproducible; their guarantee says NOT differentially private).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

PARTIES = ("hospital-a", "hospital-b", "hospital-c")
DATASET = "bank_marketing"
ROWS_PER_PARTY = 3000
TEST_ROWS = 1500


def write_model_files(out_dir: str | Path, dataset: str = DATASET, signed: bool = True) -> dict[str, Path]:
    """Write ``global-model.edprf``, ``keys/<party>.pub.pem``, ``test.csv`` (labelled, with hostile rows).

    Returns the paths by name ("model", "keys", "data", "schema").
    """
    from edprf_core import EDPRFClassifier, SeededNoiseWarning, load_embedded
    from protocol import (
        PartyKeyRegistry,
        ReleasePolicy,
        build_global_model,
        decode_release,
        encode_release,
        generate_signing_key,
        save_public_key,
    )

    out = Path(out_dir)
    keys_dir = out / "keys"
    keys_dir.mkdir(parents=True, exist_ok=True)
    X, y, schema = load_embedded(dataset)
    keys = {party: generate_signing_key("ed25519") for party in PARTIES}
    for party, key in keys.items():
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")
    registry = PartyKeyRegistry({p: k.public_key() for p, k in keys.items()})
    policy = ReleasePolicy(max_epsilon=2.0, max_depth=8, max_n_trees=50, max_bytes=1 << 22, max_n_bins=32)
    releases = []
    for i, party in enumerate(PARTIES):
        rows = slice(i * ROWS_PER_PARTY, (i + 1) * ROWS_PER_PARTY)
        clf = EDPRFClassifier(schema, epsilon=1.0, n_trees=4, max_depth=4, n_bins=10, random_state=i)
        with warnings.catch_warnings():  # seeded on purpose: a reproducible test model (its guarantee says NOT DP)
            warnings.simplefilter("ignore", SeededNoiseWarning)
            clf.fit(X.iloc[rows], y.iloc[rows])
        data = encode_release(clf.forest_, party, keys[party] if signed else None, run_id="test-run")
        releases.append(decode_release(data, schema, policy, registry if signed else None))
    model = out / "global-model.edprf"
    model.write_bytes(build_global_model(schema, releases, {"run_id": "test-run"}))
    start = len(PARTIES) * ROWS_PER_PARTY
    test = X.iloc[start : start + TEST_ROWS].copy()
    test[schema.label.column] = y.iloc[start : start + TEST_ROWS].to_numpy()
    data_path = out / "test.csv"
    test.to_csv(data_path, index=False)
    schema_path = out / "schema.toml"
    schema_path.write_text(schema.to_toml(), encoding="utf-8")
    return {"model": model, "keys": keys_dir, "data": data_path, "schema": schema_path}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.model_use.model_files OUT_DIR")
    for name, path in write_model_files(sys.argv[1]).items():
        print(f"{name}: {path}")
