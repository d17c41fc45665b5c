"""Lay out demonstration parties for deploy/compose.yaml (a trial: real parties make their own files).

    python3 deploy/make_demo_parties.py --local deploy/local hospital-a hospital-b hospital-c

Splits the embedded UCI wall-following robot data (IID, a fixed shuffle) into one CSV per party
and a central test set, and writes::

    <local>/coordinator/schema.toml                   the federation's public schema (run config schema-path)
    <local>/coordinator/test.csv                      central test rows (run config test-data-path)
    <local>/coordinator/party-keys/<id>.pub.pem       release-signing public keys (run config keys-dir)
    <local>/coordinator/supernode-keys/<id>.auth.key.pub   authentication keys to register
    <local>/parties/<id>/{data.csv,schema.toml,policy.toml}
    <local>/parties/<id>/keys/<id>.{auth.key,auth.key.pub,signing.pem,pub.pem}

Each policy is deploy/policy.example.toml with the party's id and the schema's fingerprint filled
in.  The keys come from `edprf certs party`.  Nothing is overwritten: an existing party directory
is an error.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

from edprf_core import load_embedded
from edprf_fl.cli._certs import party_files
from edprf_fl.cli._main import main as edprf

TEMPLATE = Path(__file__).resolve().parent / "policy.example.toml"
FINGERPRINT_PLACEHOLDER = "sha256:REPLACE-WITH-THE-SCHEMA-FINGERPRINT"


def policy_text(party_id: str, fingerprint: str) -> str:
    """deploy/policy.example.toml for ``party_id`` and the schema ``fingerprint``."""
    text = TEMPLATE.read_text(encoding="utf-8")
    if FINGERPRINT_PLACEHOLDER not in text or 'party-id = "hospital-a"' not in text:
        raise ValueError(f"{TEMPLATE}: the placeholders this script fills in are missing")
    return text.replace(FINGERPRINT_PLACEHOLDER, fingerprint).replace(
        'party-id = "hospital-a"', f'party-id = "{party_id}"'
    )


def make_demo_parties(local: Path, party_ids: list[str], test_fraction: float = 0.2, seed: int = 0) -> None:
    X, y, schema = load_embedded("wall_robot_navigation")
    label = schema.label.column
    parties_dir, coordinator = local / "parties", local / "coordinator"
    existing = [p for p in party_ids if (parties_dir / p).exists()]
    if existing:
        raise FileExistsError(f"party directories already exist: {existing} (remove them or choose others)")
    for d in (coordinator / "party-keys", coordinator / "supernode-keys"):
        d.mkdir(parents=True, exist_ok=True)
    rows = np.random.default_rng(seed).permutation(len(X))
    n_test = round(test_fraction * len(X))
    frame = X.assign(**{label: y.to_numpy()})
    if not (coordinator / "schema.toml").exists():
        schema.save(coordinator / "schema.toml")
        frame.iloc[rows[:n_test]].to_csv(coordinator / "test.csv", index=False)
    for party_id, part in zip(party_ids, np.array_split(rows[n_test:], len(party_ids)), strict=True):
        d = parties_dir / party_id
        d.mkdir(parents=True)
        schema.save(d / "schema.toml")
        frame.iloc[part].to_csv(d / "data.csv", index=False)
        (d / "policy.toml").write_text(policy_text(party_id, schema.fingerprint), encoding="utf-8")
        if edprf(["certs", "party", "--out", str(d / "keys"), "--party-id", party_id]) != 0:
            raise RuntimeError(f"edprf certs party failed for {party_id}")
        files = party_files(d / "keys", party_id)
        shutil.copy(files.signing_pub, coordinator / "party-keys")
        shutil.copy(files.auth_pub, coordinator / "supernode-keys")
    print(f"demo parties {', '.join(party_ids)} written under {parties_dir}; coordinator files under {coordinator}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--local", type=Path, required=True, help="the compose file's EDPRF_LOCAL directory")
    parser.add_argument("party_ids", nargs="+", metavar="PARTY_ID")
    args = parser.parse_args(argv)
    try:
        make_demo_parties(args.local, args.party_ids)
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"make_demo_parties: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
