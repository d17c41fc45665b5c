"""Fixtures of the deployment tests: a process-tracking deployment and a PKI made by `edprf certs`."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from edprf_fl.cli._certs import PartyFiles, party_files
from edprf_fl.cli._main import main

from ._harness import Deployment, Tls, new_deployment


@pytest.fixture
def deployment(tmp_path, request) -> Deployment:
    return new_deployment(tmp_path, request)


@dataclass
class Pki:
    """A consortium CA, the SuperLink's certificate for 127.0.0.1, parties' keys; and a foreign CA."""

    root: Path
    tls: Tls
    foreign_ca: Path
    keys: Path

    def party(self, party_id: str) -> PartyFiles:
        """Keys of ``party_id``, made by `edprf certs party` on first use."""
        files = party_files(self.keys, party_id)
        if not files.auth_key.exists():
            assert main(["certs", "party", "--out", str(self.keys), "--party-id", party_id]) == 0
        return files

    def keys_dir(self, party_ids, name: str = "coordinator-keys") -> Path:
        """The coordinator's keys-dir: the parties' ``<id>.pub.pem`` release-signing keys."""
        d = self.root / name
        d.mkdir(exist_ok=True)
        for party_id in party_ids:
            shutil.copy(self.party(party_id).signing_pub, d)
        return d


@pytest.fixture
def pki(tmp_path, capsys) -> Pki:
    pki_dir, foreign = tmp_path / "pki", tmp_path / "foreign-pki"
    assert main(["certs", "init", "--out", str(pki_dir), "--ca-name", "edprf test consortium"]) == 0
    assert main(["certs", "server", "--out", str(pki_dir), "--san", "DNS:localhost", "--san", "IP:127.0.0.1"]) == 0
    assert main(["certs", "init", "--out", str(foreign), "--ca-name", "someone else's CA"]) == 0
    capsys.readouterr()
    return Pki(
        tmp_path,
        Tls(pki_dir / "ca.crt", pki_dir / "server.pem", pki_dir / "server.key"),
        foreign / "ca.crt",
        tmp_path / "party-keys",
    )


def ledger_rows(path: Path) -> list[tuple]:
    """(request_id, kind, epsilon, state, run_id) of a party's ledger, read-only (never creates it)."""
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
    try:
        return db.execute("SELECT request_id, kind, epsilon, state, run_id FROM spends ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # created but its tables not yet committed
        return []
    finally:
        db.close()
