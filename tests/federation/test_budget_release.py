"""`edprf budget` names each entry's request id, and `--release` hands a party's privacy officer the exact bytes
it released under one (hospital IT walkthrough: the table showed only the first run id, the request-tag was in
`--json` alone, and no command showed a release a ledger stores)."""

from __future__ import annotations

import stat

from client import BudgetLedger, Party
from edprf_fl.cli._main import main

from .test_party import _request, party_files  # noqa: F401 (a fixture)


def test_the_table_names_the_request_of_every_entry(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("trial-7/train", "release", 1.0, run_id="123456789", detail="2 trees")
    ledger.complete("trial-7/train", b"bytes")
    ledger.reserve("consortium-2026-q4-" + "x" * 60 + "/train", "release", 0.5, run_id="987")
    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--cap", "2"]) == 0
    out = capsys.readouterr().out
    header, first, second = out.splitlines()[:3]
    assert "request" in header.split() and "trial-7/train" in first.split()
    assert "...xxxx" in second and "x/train" in second and "consortium" not in second  # a long id: its end


def test_release_writes_the_bytes_the_party_sent_and_inspect_reads_them(party_files, tmp_path, capsys):  # noqa: F811
    setup, schema = party_files
    sent = Party(setup).train(_request(schema, request_id="trial-1/train"))
    out = tmp_path / "trial-1.release"
    argv = ["budget", str(setup.ledger_path), "--release", "trial-1/train", "--out", str(out)]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert out.read_bytes() == sent and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert f"({len(sent)} bytes)" in said and "epsilon 1" in said and "edprf inspect" in said
    assert main(argv) == 1  # not replaced without --force
    assert "exists; pass --force" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out), "--schema", str(setup.schema_path)]) == 0
    assert "hospital-a" in capsys.readouterr().out


def test_release_of_an_unknown_or_unreleased_id_is_one_line_naming_what_exists(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("trial-1/train", "release", 1.0, run_id="1")
    ledger.complete("trial-1/train", b"bytes")
    ledger.reserve("trial-2/train", "release", 0.5, run_id="2")  # reserved, never released
    out = tmp_path / "r.release"
    path = str(tmp_path / "ledger.sqlite")
    assert main(["budget", path, "--release", "trial-9/train", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no release under request id 'trial-9/train'" in err and "trial-1/train, trial-2/train" in err
    assert main(["budget", path, "--release", "trial-2/train", "--out", str(out)]) == 1
    assert "is reserved and holds no released bytes: nothing was sent" in capsys.readouterr().err
    assert main(["budget", path, "--release", "trial-1/train"]) == 1
    assert "give --out FILE" in capsys.readouterr().err
    assert not out.exists()


def test_a_release_larger_than_a_ledger_value_is_read_whole(tmp_path, capsys):
    """Releases of big forests exceed the 64 KiB bound every other ledger value is read at (review)."""
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    big = bytes(range(256)) * 4096  # 1 MiB
    ledger.reserve("big/train", "release", 1.0, run_id="1")
    ledger.complete("big/train", big)
    out = tmp_path / "big.release"
    assert main(["budget", str(tmp_path / "ledger.sqlite"), "--release", "big/train", "--out", str(out)]) == 0
    assert out.read_bytes() == big
    small = ["--max-bytes", str(64 << 10)]  # a file above the bound is refused before it is read
    assert (
        main(
            ["budget", str(tmp_path / "ledger.sqlite"), "--release", "big/train", "--out", str(out), "--force", *small]
        )
        == 1
    )
    assert "expected a ledger of at most 65536 bytes" in capsys.readouterr().err


def test_release_with_json_is_refused(tmp_path, capsys):
    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=2.0)
    ledger.reserve("a/train", "release", 1.0, run_id="1")
    ledger.complete("a/train", b"bytes")
    argv = ["budget", str(tmp_path / "ledger.sqlite"), "--release", "a/train", "--out", str(tmp_path / "r"), "--json"]
    assert main(argv) == 1
    assert "leave out --json" in capsys.readouterr().err and not (tmp_path / "r").exists()
