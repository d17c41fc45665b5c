"""`edprf party check` and `edprf party init-policy`: a party's set-up checked before it joins.

The ClientApp's lifespan hook runs the same checks (client._preflight.log_preflight): tested here
on the same set-ups through the logging it writes.
"""

from __future__ import annotations

import logging
import os
import re

import numpy as np
import pytest

from client import BudgetLedger, PartyPolicy, parse_node_config
from client._preflight import log_preflight
from edprf_core import load_embedded, load_schema
from edprf_fl.cli._main import main


@pytest.fixture
def party(tmp_path):
    """A party laid out as on a hospital's host: data share, schema, policy, ledger path, signing key."""
    X, y, schema = load_embedded("wall_robot_navigation")
    rows = np.random.default_rng(0).permutation(len(X))[:400]
    d = tmp_path / "hospital-a"
    d.mkdir()
    X.iloc[rows].assign(**{schema.label.column: y.iloc[rows].to_numpy()}).to_csv(d / "data.csv", index=False)
    schema.save(d / "schema.toml")
    assert (
        main(
            [
                "party",
                "init-policy",
                "--schema",
                str(d / "schema.toml"),
                "--party-id",
                "hospital-a",
                "--output",
                str(d / "policy.toml"),
            ]
        )
        == 0
    )
    assert main(["certs", "party", "--out", str(d / "keys"), "--party-id", "hospital-a", "--only", "signing"]) == 0
    paths = {
        "data-path": d / "data.csv",
        "schema-path": d / "schema.toml",
        "policy-path": d / "policy.toml",
        "ledger-path": d / "ledger.sqlite",
        "signing-key": d / "keys" / "hospital-a.signing.pem",
    }
    return paths, schema


def _config(paths) -> str:
    return " ".join(f"{k}='{v}'" for k, v in paths.items())


def _check(paths, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["party", "check", "--node-config", _config(paths)])
    captured = capsys.readouterr()
    # the findings and the verdict; not the progress lines of the data file's read (stderr, tested in
    # tests/federation/test_cli_progress.py)
    return code, [line for line in (captured.out + captured.err).splitlines() if not _progress(line)]


def _progress(line: str) -> bool:
    return line.startswith(("reading ", "      "))


def _problems(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("problem: ")]


def test_a_correct_party_passes_and_init_policy_writes_the_full_fingerprint(party, capsys):
    paths, schema = party
    assert f'schema-fingerprint = "{schema.fingerprint}"' in paths["policy-path"].read_text()
    code, lines = _check(paths, capsys)
    assert code == 0, lines
    assert _problems(lines) == []
    assert any("rows read: 400; rows kept: 400" in line for line in lines), lines
    assert any(str(paths["ledger-path"]) in line and "created on the first request" in line for line in lines)
    assert not paths["ledger-path"].exists()  # a check never creates the ledger
    assert lines[-1] == "hospital-a: no problem found"


def test_a_moved_data_file_is_one_line_naming_the_file_and_the_fix(party, capsys):
    paths, _ = party
    moved = paths["data-path"].with_name("moved.csv")
    paths["data-path"].rename(moved)
    code, lines = _check(paths, capsys)
    assert code == 1
    assert _problems(lines) == [
        (
            f"problem: {paths['data-path']}: no such data file; set data-path to the party's "
            "CSV (columns as in the schema)"
        )
    ]


def test_an_edited_schema_bound_breaks_the_policy_fingerprint(party, capsys):
    paths, schema = party
    text = paths["schema-path"].read_text()
    feature = schema.features[0]
    edited = text.replace(f"upper = {feature.upper!r}", f"upper = {feature.upper + 1.0!r}", 1)
    assert edited != text
    paths["schema-path"].write_text(edited)
    code, lines = _check(paths, capsys)
    assert code == 1
    [problem] = _problems(lines)
    assert problem.startswith(f"problem: {paths['policy-path']}: schema-fingerprint {schema.fingerprint} is not")
    assert "take the federation's schema again" in problem


def test_a_header_without_the_schema_columns_and_a_readable_key_are_problems(party, capsys):
    paths, schema = party
    lines_in = paths["data-path"].read_text().splitlines()
    paths["data-path"].write_text("\n".join([lines_in[0].replace(schema.label.column, "outcome"), *lines_in[1:]]))
    os.chmod(paths["signing-key"], 0o644)
    code, lines = _check(paths, capsys)
    assert code == 1
    problems = _problems(lines)
    assert len(problems) == 2, problems
    assert any(
        p.startswith(f"problem: {paths['signing-key']}:") and p.endswith(f"chmod 600 {paths['signing-key']}")
        for p in problems
    ), problems
    assert any(
        p.startswith(f"problem: {paths['data-path']}:") and "the header must name the schema's columns" in p
        for p in problems
    ), problems


def test_an_exhausted_ledger_and_a_missing_key_are_reported(party, capsys):
    paths, _ = party
    ledger = BudgetLedger(paths["ledger-path"], 2.0)
    ledger.reserve("r1", "release", 1.0)
    ledger.complete("r1", b"x")
    ledger.reserve("r2", "release", 0.995)
    before = paths["ledger-path"].read_bytes()
    del paths["signing-key"]
    code, lines = _check(paths, capsys)
    assert code == 1
    [problem] = _problems(lines)
    assert problem.startswith(f"problem: {paths['ledger-path']}: remaining epsilon 0.005 is below min-epsilon 0.01")
    # review rev-auto A3: an ok line with the same figures was printed for the ledger this problem is about
    assert problem.endswith("(2 entries, spent 1.995 of the lifetime cap 2)")
    assert not [line for line in lines if line.startswith(f"ok: {paths['ledger-path']}:")], lines
    assert any("1 request reserved less than 1 h ago and not completed: running now" in line for line in lines)
    assert any(line.startswith("note: node config: no signing-key") for line in lines)
    assert paths["ledger-path"].read_bytes() == before  # read-only


def test_a_lost_ledger_whose_anchor_records_the_cap_is_a_problem_as_an_exhausted_ledger_is(party, capsys):
    """A lost ledger whose anchor recorded the whole cap was 'ok: no ledger yet ...; 0 epsilon available' (no
    problem), while the same spend in the ledger itself was the below-min-epsilon problem: the party refuses
    every request either way (its new ledger counts what the anchor records)."""
    paths, _ = party
    BudgetLedger(paths["ledger-path"], 2.0).reserve("r1", "release", 2.0)
    for f in paths["ledger-path"].parent.glob("ledger.sqlite*"):
        f.unlink()
    code, lines = _check(paths, capsys)
    assert code == 1
    assert any("no ledger, but its anchor ledger-anchor.json records 2 spent" in line for line in lines), lines
    assert not [line for line in lines if line.startswith(f"ok: {paths['ledger-path']}:")], lines  # rev-auto A3
    [problem] = _problems(lines)
    assert problem.startswith(f"problem: {paths['ledger-path']}: remaining epsilon 0 is below min-epsilon 0.01")
    assert problem.endswith("(no ledger yet, spent 2 of the lifetime cap 2)")
    assert not paths["ledger-path"].exists()  # the check creates no ledger


def test_a_dangling_link_at_the_ledger_path_is_a_problem_for_party_check_and_budget(party, capsys):
    """It was 'ok: no ledger yet' (and `edprf budget`: 'no ledger at ...'), while the party started a new ledger at
    the link's target."""
    paths, _ = party
    target = paths["ledger-path"].parent / "mnt" / "ledger.sqlite"
    paths["ledger-path"].symlink_to(target)
    code, lines = _check(paths, capsys)
    assert code == 1
    [problem] = _problems(lines)
    assert problem.startswith(
        f"problem: {paths['ledger-path']}: {paths['ledger-path']} is a symbolic link to {target}, which does not exist"
    )
    assert main(["budget", str(paths["ledger-path"])]) == 1
    assert f"is a symbolic link to {target}, which does not exist" in capsys.readouterr().err
    assert not target.exists()


def test_the_clientapp_lifespan_logs_the_same_problems_and_never_reads_the_rows(party, caplog, monkeypatch):
    import edprf_core

    def no_scan(*_, **__):
        raise AssertionError("the lifespan hook read the data rows")

    monkeypatch.setattr(edprf_core, "check_data", no_scan)
    paths, schema = party
    header = paths["data-path"].read_text().splitlines()[0]
    with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
        assert log_preflight(parse_node_config(_config(paths)), {}, logging.getLogger("edprf.test.lifespan")).ok
    paths["data-path"].write_text(header.replace(schema.label.column, "outcome") + "\n1,2\n")
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
        assert not log_preflight(parse_node_config(_config(paths)), {}, logging.getLogger("edprf.test.lifespan")).ok
    assert any("the header must name the schema's columns" in r.getMessage() for r in caplog.records)
    caplog.clear()
    paths["data-path"].unlink()
    node_config = parse_node_config(_config(paths))
    logger = logging.getLogger("edprf.test.lifespan")
    with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
        report = log_preflight(node_config, {}, logger)
    assert not report.ok
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert f"party check: problem: {paths['data-path']}: no such data file" in errors[0]
    assert errors[-1].startswith("party check of hospital-a: 1 problem above")


def test_the_clientapp_logs_a_ledger_trail_s_note_at_warning_once_per_ledger_state(party, caplog, capsys):
    """A cap change and a crashed reservation were logged at WARNING at every ClientApp start, for ever (walkthrough:
    the same two lines before every message in the SuperNode's log).  Each is now at WARNING the first time the
    ledger is in that state and at DEBUG after; a new state (another change, another crash) is a new note.
    `edprf party check` still shows both every time, and what the ledger counts does not change."""
    from client import BudgetLedger as Ledger
    from client._ledger import read_ledger_readonly

    paths, _ = party
    ledger = paths["ledger-path"]
    Ledger(ledger, cap=1.0).reserve("run-1/train", "release", 0.5)  # reserved, never completed: a crash
    Ledger(ledger, cap=2.0)  # the policy's cap changed from 1 to 2
    logger = logging.getLogger("edprf.test.lifespan")

    def lifespan_notes() -> dict[str, int]:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
            log_preflight(parse_node_config(_config(paths)), {}, logger)
        notes = [r for r in caplog.records if "party check: note:" in r.getMessage()]
        return {
            ("cap" if "cap was changed" in r.getMessage() else "crash"): r.levelno
            for r in notes
            if "cap was changed" in r.getMessage() or "not completed" in r.getMessage()
        }

    assert lifespan_notes() == {"cap": logging.WARNING, "crash": logging.WARNING}
    assert lifespan_notes() == {"cap": logging.DEBUG, "crash": logging.DEBUG}
    assert lifespan_notes() == {"cap": logging.DEBUG, "crash": logging.DEBUG}
    again = Ledger(ledger, cap=2.0)  # the first marked failed, another crash: the same count, another state
    again.fail("run-1/train", "interrupted")
    again.reserve("run-2/train", "release", 0.5)
    assert lifespan_notes() == {"cap": logging.DEBUG, "crash": logging.WARNING}
    Ledger(ledger, cap=3.0)  # another change of the cap
    assert lifespan_notes() == {"cap": logging.WARNING, "crash": logging.DEBUG}
    code, lines = _check(paths, capsys)  # the operator's check shows both, every time
    assert code == 0 and sum(("cap was changed" in line or "not completed" in line) for line in lines) == 2
    spent = [line for line in lines if "spent 1 (" in line or "spent 1," in line]  # the ledger line: per record
    assert spent and "epsilon per record (data row): a person with k rows has faced up to k times" in spent[0]
    entries = read_ledger_readonly(ledger)
    assert [(e.request_id, e.state) for e in entries] == [("run-1/train", "failed"), ("run-2/train", "reserved")]


def test_a_node_config_without_the_paths_is_refused(capsys):
    assert main(["party", "check", "--node-config", "data-path='x.csv'"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("problem: node config: missing keys ['schema-path', 'policy-path', 'ledger-path']")
    assert "every quote closed" in err


def test_the_supernode_s_own_key_and_root_certificates_are_checked(party, tmp_path, capsys):
    """A wrong --auth-supernode-private-key path ended the SuperNode with a traceback, and a key given as
    --root-certificates made it hang; `edprf party check` now reads both as flower-supernode does."""
    paths, _ = party
    keys = paths["signing-key"].parent
    assert main(["certs", "party", "--out", str(keys), "--party-id", "hospital-a", "--only", "auth"]) == 0
    pki = tmp_path / "pki"
    assert main(["certs", "init", "--out", str(pki), "--ca-name", "test consortium"]) == 0
    auth, ca = keys / "hospital-a.auth.key", pki / "ca.crt"

    def check(*extra):
        capsys.readouterr()
        code = main(["party", "check", "--node-config", _config(paths), *map(str, extra)])
        out = capsys.readouterr()
        return code, out.out + out.err

    code, text = check("--auth-key", auth, "--root-certificates", ca)
    assert code == 0 and "SuperNode authentication key readable" in text and "root certificates readable" in text
    code, text = check("--auth-key", keys / "missing.key")
    assert code == 1 and "missing.key" in text
    code, text = check("--auth-key", paths["signing-key"])  # the release-signing key given as the auth key
    assert code == 1 and "not a SuperNode authentication key" in text
    code, text = check("--root-certificates", auth)  # a key given as the CA certificate
    assert code == 1 and "holds a private key: give --root-certificates the consortium's CA certificate" in text


def test_a_signing_key_named_for_another_party_is_a_problem(party, capsys):
    """A typo in party-id (hospital-A) beside hospital-a.signing.pem passed the check, then burnt epsilon."""
    paths, _ = party
    policy = paths["policy-path"]
    policy.write_text(policy.read_text().replace('party-id = "hospital-a"', 'party-id = "hospital-A"'))
    code, lines = _check(paths, capsys)
    assert code == 1
    assert any("named for 'hospital-a' but the policy's party-id is 'hospital-A'" in p for p in _problems(lines))


def test_a_semicolon_file_is_read_with_the_node_config_s_data_separator(party, capsys):
    """A European export (fields separated by ';') could not be used by a party: the node config had no separator."""
    from client import Party, PartySetup, parse_node_config
    from protocol.messages import TrainRequest

    paths, schema = party
    data = paths["data-path"]
    data.write_text(data.read_text().replace(",", ";"))
    code, lines = _check(paths, capsys)
    problems = _problems(lines)
    assert code == 1 and any("is that the separator? set data-separator=';' in the node config" in p for p in problems)
    assert not any("--sep" in p for p in problems), problems  # a flag of the edprf commands, not of a party
    with_sep = {**paths, "data-separator": ";"}
    code, lines = _check(with_sep, capsys)
    assert code == 0 and not _problems(lines), lines
    assert any("rows kept: 400" in line for line in lines), lines
    setup = PartySetup.from_configs(parse_node_config(_config(with_sep)), {})
    request = TrainRequest("r/train", "r", schema.fingerprint, 1.0, 3, 1, "binary", 8, "add-remove", -1)
    assert Party(setup).train(request)  # released from the ';' file
    code, lines = _check({**paths, "data-separator": "ab"}, capsys)
    assert code == 1 and any("data-separator: expected one character" in line for line in lines)


def test_a_tab_file_is_read_with_data_separator_tab_as_the_command_line_reads_it(party, capsys):
    """The node config took only the tab character itself (``data-separator="\\t"``, a double-quoted TOML
    escape), while ``--sep`` also takes ``tab`` and ``'\\t'``: a single-quoted ``'\\t'`` (backslash, t, as TOML
    keeps it) was refused as two characters, and the hint said the escape that a shell's quoting easily breaks."""
    from client import Party, PartySetup, parse_node_config
    from protocol.messages import TrainRequest

    paths, schema = party
    data = paths["data-path"]
    data.write_text(data.read_text().replace(",", "\t"))
    code, lines = _check(paths, capsys)
    assert code == 1 and any("set data-separator='tab' in the node config" in p for p in _problems(lines)), lines
    for name in ("tab", "TAB", "\\t"):  # the word, any case, and backslash-t kept by single quotes
        with_tab = {**paths, "data-separator": name}
        code, lines = _check(with_tab, capsys)
        assert code == 0 and not _problems(lines), (name, lines)
        assert any("rows kept: 400" in line for line in lines), lines
    setup = PartySetup.from_configs(parse_node_config(_config(with_tab)), {})
    assert setup.data_separator == "\t"
    request = TrainRequest("r/train", "r", schema.fingerprint, 1.0, 3, 1, "binary", 8, "add-remove", -1)
    assert Party(setup).train(request)  # released from the tab-separated file
    code, lines = _check({**paths, "data-separator": "tabs"}, capsys)  # not a name of the tab: still refused
    assert code == 1 and any("data-separator: expected one character" in line for line in lines)


def _without_header(paths) -> None:
    """The party's data file without its header line (as UCI's processed.cleveland.data comes)."""
    data = paths["data-path"]
    data.write_text(data.read_text().split("\n", 1)[1])


def test_a_headerless_file_is_checked_with_the_node_config_s_data_header(party, capsys, caplog):
    """`edprf party check` said "pass --no-header" for a headerless file: no party command has that flag."""
    paths, _ = party
    _without_header(paths)
    code, lines = _check(paths, capsys)
    problems = _problems(lines)
    assert code == 1 and len(problems) == 1, lines
    assert "if the file has no header, set data-header=false in the node config" in problems[0]
    assert "--no-header" not in problems[0]
    with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):  # the ClientApp's check: the header only
        assert not log_preflight(parse_node_config(_config(paths)), {}, logging.getLogger("edprf.test.lifespan")).ok
    assert any("set data-header=false in the node config" in r.getMessage() for r in caplog.records)
    for value in ("false", "'false'"):  # TOML's false, as Flower parses it, and the quoted word
        capsys.readouterr()
        code = main(["party", "check", "--node-config", f"{_config(paths)} data-header={value}"])
        captured = capsys.readouterr()
        lines = (captured.out + captured.err).splitlines()
        assert code == 0 and not _problems(lines), lines
        assert any("no header line (data-header=false)" in line for line in lines), lines
        assert any("rows read: 400; rows kept: 400" in line for line in lines), lines
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
            config = parse_node_config(f"{_config(paths)} data-header={value}")
            assert log_preflight(config, {}, logging.getLogger("edprf.test.lifespan")).ok


def test_the_clientapp_check_reads_no_record_of_a_file_without_a_header(party, caplog, monkeypatch):
    """Black-box review (stop 57): with data-header=false the ClientApp's check, run before every reply and
    outside its hold, read the first line, a record: the reply's time told its length.  It reads no line then;
    ``edprf party check`` (run by the party's staff) still reads it."""
    from client import _preflight

    read: list = []
    real = _preflight._first_line
    monkeypatch.setattr(_preflight, "_first_line", lambda path: read.append(path) or real(path))
    paths, _ = party
    node_config = parse_node_config(f"{_config(paths)} data-header=false")
    with caplog.at_level(logging.DEBUG, logger="edprf.test.lifespan"):
        assert log_preflight(node_config, {}, logging.getLogger("edprf.test.lifespan")).ok
    assert read == [] and any("no header line (data-header=false" in r.getMessage() for r in caplog.records)
    node_config = parse_node_config(_config(paths))  # with a header, the header line is read (public)
    assert log_preflight(node_config, {}, logging.getLogger("edprf.test.lifespan")).ok and read == [paths["data-path"]]


def test_data_header_false_on_a_file_with_a_header_is_a_note_and_a_bad_value_a_problem(party, capsys):
    paths, _ = party
    code, lines = _check({**paths, "data-header": "false"}, capsys)
    assert code == 0  # the header line is read as a record and left out: worth a note, not a refusal
    assert any(line.startswith("note: ") and "the first line names the schema's columns" in line for line in lines)
    code, lines = _check({**paths, "data-header": "no"}, capsys)
    assert code == 1
    assert any("data-header: expected true or false, got 'no'" in p for p in _problems(lines)), lines


def test_party_check_s_usage_lists_the_optional_node_config_keys(capsys):
    with pytest.raises(SystemExit):
        main(["party", "check", "--help"])
    usage = "".join(capsys.readouterr().out.split())  # argparse wraps lines after a hyphen too
    assert "[data-separator=';'or'tab'][data-header=false]" in usage and "data-header=falsereadsadatafile" in usage


def test_init_policy_refuses_to_overwrite_and_keeps_chosen_caps(party, capsys):
    paths, schema = party
    assert (
        main(
            [
                "party",
                "init-policy",
                "--schema",
                str(paths["schema-path"]),
                "--party-id",
                "hospital-a",
                "--output",
                str(paths["policy-path"]),
            ]
        )
        == 1
    )
    assert "pass --force" in capsys.readouterr().err
    assert (
        main(
            [
                "party",
                "init-policy",
                "--schema",
                str(paths["schema-path"]),
                "--party-id",
                "hospital-b",
                "--output",
                str(paths["policy-path"]),
                "--force",
                "--lifetime-epsilon-cap",
                "3.5",
            ]
        )
        == 0
    )
    from client import load_policy

    assert load_policy(paths["policy-path"]) == PartyPolicy(
        party_id="hospital-b", lifetime_epsilon_cap=3.5, schema_fingerprint=schema.fingerprint
    )


def _init_policy(paths, *extra: str, schema=None) -> int:
    return main(
        [
            "party",
            "init-policy",
            "--schema",
            str(schema or paths["schema-path"]),
            "--party-id",
            "hospital-a",
            "--output",
            str(paths["policy-path"]),
            *extra,
        ]
    )


def test_init_policy_force_for_a_new_schema_keeps_the_other_settings_and_prints_the_changes(party, capsys):
    # Review (day-2 operations, finding 10): re-run with --force to take a new schema's fingerprint, it reset
    # every setting to the defaults without a word (lifetime cap 6.0 -> 2.0).
    from client import load_policy

    paths, schema = party
    assert _init_policy(paths, "--force", "--lifetime-epsilon-cap", "6", "--declared-rows", "400") == 0
    text = paths["policy-path"].read_text()
    paths["policy-path"].write_text(text.replace("max-depth = 8", "max-depth = 5"))  # edited by hand
    new_schema = paths["schema-path"].with_name("schema-v2.toml")
    new_schema.write_text(paths["schema-path"].read_text().replace("upper = 5.0", "upper = 6.0", 1))
    new_fingerprint = load_schema(new_schema).fingerprint
    assert new_fingerprint != schema.fingerprint
    capsys.readouterr()

    assert _init_policy(paths, "--force", schema=new_schema) == 0
    out = capsys.readouterr().out
    assert load_policy(paths["policy-path"]) == PartyPolicy(
        party_id="hospital-a",
        schema_fingerprint=new_fingerprint,
        lifetime_epsilon_cap=6.0,
        declared_rows=400,
        max_depth=5,
    )
    assert f"  schema-fingerprint: {schema.fingerprint!r} -> {new_fingerprint!r}" in out.splitlines()
    assert "lifetime-epsilon-cap" not in out  # unchanged: not listed

    assert _init_policy(paths, "--force", "--lifetime-epsilon-cap", "2", schema=new_schema) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1:] == [
        "the replaced policy's other settings kept; changed:",
        "  lifetime-epsilon-cap: 6.0 -> 2.0",
    ]
    assert load_policy(paths["policy-path"]).max_depth == 5


def test_init_policy_force_with_another_party_id_says_its_ledger_will_be_refused(party, capsys):
    """Whole-change review: a changed party-id silently orphaned the party's ledger (bound to its party)."""
    paths, _ = party
    assert _init_policy(paths, "--force") == 0
    capsys.readouterr()
    text = paths["policy-path"].read_text()
    paths["policy-path"].write_text(text.replace('party-id = "hospital-a"', 'party-id = "hospital-old"'))
    assert _init_policy(paths, "--force") == 0
    out = capsys.readouterr().out
    assert "  party-id: 'hospital-old' -> 'hospital-a'" in out.splitlines()
    assert "note: the party-id changed ('hospital-old' -> 'hospital-a'): a ledger written for 'hospital-old'" in out
    assert _init_policy(paths, "--force") == 0
    assert "note: the party-id changed" not in capsys.readouterr().out


def test_init_policy_force_refuses_a_file_that_is_not_a_policy(party, capsys):
    paths, _ = party
    paths["policy-path"].write_text("lifetime-epsilon-cap = \n")  # an edit gone wrong
    assert _init_policy(paths, "--force") == 1
    err = capsys.readouterr().err
    assert "does not read as a policy" in err and "delete it to start from the defaults" in err
    assert paths["policy-path"].read_text() == "lifetime-epsilon-cap = \n"


def test_schema_check_prints_the_full_fingerprint(party, capsys):
    paths, schema = party
    capsys.readouterr()
    assert main(["schema", "check", str(paths["schema-path"]), str(paths["data-path"])]) == 0
    out = capsys.readouterr().out
    assert f"schema fingerprint: {schema.fingerprint} " in out


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--party", "0.5"],
        ["party", "check", "--node", "x"],
        ["certs", "init", "--ou", "d", "--ca-name", "x"],
    ],
)
def test_abbreviated_options_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err or "the following arguments are required" in err, err


@pytest.mark.parametrize(
    "text",
    [
        "data-path='/a b/x.csv' schema-path=\"s.toml\" n=3 x=1.5 flag=true",
        "",
        "partition-id=0 num-partitions=2",
        "a='x=y' b='c'",
        "  a.b=1   c=2 ",
    ],
)
def test_node_config_is_read_as_flower_reads_it(text):
    from flwr.common.config import parse_config_args

    assert parse_node_config(text) == dict(parse_config_args([text]))


def test_a_toml_file_is_read_as_flower_reads_it(tmp_path):
    from flwr.common.config import parse_config_args

    path = tmp_path / "run-config.toml"
    path.write_text("epsilon = 0.5\noutput-dir = '/x y'\n[a]\nb = true\n", encoding="utf-8")
    expected = {"epsilon": 0.5, "output-dir": "/x y", "a.b": True}
    assert parse_node_config(str(path)) == dict(parse_config_args([str(path)])) == expected
    # a pair whose value ends in .toml makes the whole text a path (as Flower): one line saying so, no OSError
    with pytest.raises(ValueError, match=r"--node-config: a text ending in .toml is read as a TOML file's path"):
        parse_node_config("a=1 note=x.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ledger-path = /x/ledger.sqlite", "ledger-path: expected ledger-path='/x/ledger.sqlite' (key=value, no space"),
        ("ledger-path= '/x'", "ledger-path: expected ledger-path='/x' (key=value"),
        ("data-header =false", "data-header: expected data-header=false (key=value"),
        ("n = 3", "n: expected n=3 (key=value"),
        ("stray", "expected key=value pairs separated by spaces, got 'stray'"),
    ],
)
def test_text_flower_would_drop_is_refused_naming_the_key_and_the_form(text, message):
    """`ledger-path = /x/ledger.sqlite` was read as no pair at all, by Flower and by us: `edprf party check` then said
    "missing keys ['ledger-path']" of a key the operator had written (hospital IT walkthrough)."""
    from flwr.common.config import parse_config_args

    full = f"data-path='d.csv' schema-path='s.toml' policy-path='p.toml' {text}"
    assert set(parse_config_args([full])) == {"data-path", "schema-path", "policy-path"}  # Flower drops it
    with pytest.raises(ValueError, match=re.escape(f"--node-config: {message}")):
        parse_node_config(full)


def test_party_check_names_the_spaced_key(capsys):
    config = "data-path='d.csv' schema-path='s.toml' policy-path='p.toml' ledger-path = /x/ledger.sqlite"
    assert main(["party", "check", "--node-config", config]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "edprf party check: error: --node-config: ledger-path: expected ledger-path='/x/ledger.sqlite' (key=value, no "
        "space around '='), got 'ledger-path = /x/ledger.sqlite', which Flower would ignore"
    )


def test_a_misspelt_node_config_key_is_refused(capsys):
    """An optional key misspelt (signing-kye) would otherwise leave the party silently unsigned."""
    config = "data-path='x.csv' schema-path='s.toml' policy-path='p.toml' ledger-path='l.sqlite' signing-kye='k.pem'"
    assert main(["party", "check", "--node-config", config]) == 1
    err = capsys.readouterr().err
    assert err.startswith("problem: node config: unknown keys ['signing-kye']; allowed: [")


@pytest.mark.parametrize("pair", ["data-header=no", "data-header=False", "data-path=/srv/data.csv"])
def test_a_node_config_value_that_is_not_toml_is_named_with_its_key(pair):
    """`data-header=no` gave "cannot be parsed (Invalid value (at line 6, column 15))" (runbook walkthrough)."""
    from client import parse_node_config

    with pytest.raises(ValueError, match=f"--node-config: {pair} cannot be parsed: a text value needs quotes"):
        parse_node_config(f"schema-path='s.toml' {pair} ledger-path='l'")


def test_lines_and_rows_the_rules_leave_out_are_notes(party, capsys):
    """A malformed line and an undeclared class were listed as 'ok:' (walkthrough of stop 45): a party's operator
    skimming for problems and notes missed them.  They are notes now; the check still passes."""
    paths, _ = party
    with paths["data-path"].open("a", encoding="utf-8") as f:
        f.write("1.0,2.0,oops\n")
    code, lines = _check(paths, capsys)
    assert code == 0 and _problems(lines) == []
    assert any(line.startswith("note: ") and "lines left out (" in line and line.endswith(": 1") for line in lines)
    assert not any(line.startswith("ok: ") and "left out" in line for line in lines)


@pytest.mark.parametrize("rows", [1, 55])
def test_a_file_not_in_utf8_is_named_with_the_re_encoding_hint(party, capsys, rows):
    """A cp1252 export lost its rows as 'undeclared' in a note (bank review S2-3): now a finding naming the encoding,
    the rows and lines affected (the operator's own file), and how to re-encode; no cell's value.  A problem from a
    tenth of the rows on (the training set would be damaged), a note below."""
    paths, schema = party
    data = paths["data-path"]
    lines = data.read_bytes().splitlines(keepends=True)
    for k in range(3, 3 + rows):
        lines[k] = lines[k].rstrip(b"\r\n") + b"\xe9\n"  # a cp1252 'e' with an accent (one byte) after the label
    data.write_bytes(b"".join(lines))
    code, out = _check(paths, capsys)
    said = [line for line in out if "not valid UTF-8" in line]
    assert len(said) == 1, out
    if rows == 1:
        assert code == 0 and said[0].startswith("note: "), out
        assert "1 row (0.2%) hold bytes that are not valid UTF-8" in said[0] and "line 4)" in said[0]
    else:
        assert code == 1 and _problems(out) == said, out
        assert "55 rows (13.8%)" in said[0] and "lines 4, 5, 6, 7, 8, ...)" in said[0]
    assert "Latin-1/cp1252?" in said[0] and "iconv -f cp1252 -t utf-8 in.csv > out.csv" in said[0]
    assert not any(c in said[0] for c in schema.classes)  # no cell's value


def _decimal_commas(paths, original: str, rows: int) -> None:
    """The data file (``original``'s text) with ';' between fields and a decimal comma in US1 of its first ``rows``
    rows."""
    lines = original.splitlines()
    out = [lines[0].replace(",", ";")]
    for i, line in enumerate(lines[1:]):
        cells = line.split(",")
        if i < rows:
            cells[0] = cells[0].replace(".", ",")
        out.append(";".join(cells))
    paths["data-path"].write_text("\n".join(out) + "\n")


def test_a_numeric_column_with_a_tenth_of_decimal_commas_is_a_problem_about_a_biased_training_set(party, capsys):
    """A bank's amounts with a decimal comma on some rows: the rows kept were the others (a biased sample) and party
    check said so in a note only (bank review S2-4).  40 of the 400 rows (10 %) make it a problem; 39 a note."""
    paths, _ = party
    paths = {**paths, "data-separator": ";"}
    original = paths["data-path"].read_text()
    assert all(line.split(",")[0].count(".") == 1 for line in original.splitlines()[1:41])  # each becomes a comma
    _decimal_commas(paths, original, 40)
    code, out = _check(paths, capsys)
    problems = _problems(out)
    assert code == 1 and len(problems) == 1, out
    assert "column 'US1': 40 rows (10.0%) are not a finite number and are dropped" in problems[0]
    assert "a biased training set" in problems[0] and "decimal comma, or a thousands comma? 40 of them" in problems[0]
    _decimal_commas(paths, original, 39)
    code, out = _check(paths, capsys)
    assert code == 0 and _problems(out) == [], out
    assert any(
        line.startswith("note: ") and "column 'US1': decimal comma, or a thousands comma? 39 of them" in line
        for line in out
    ), out


def test_a_data_file_too_big_for_the_memory_is_named_before_it_is_read(tmp_path):
    """A bank's 10^7-row file needs about 3 times its size to read: party check says so against the memory the
    machine has (a problem past all of it, a note past half), and says nothing for a file that fits easily."""
    from client._preflight import READ_MEMORY_PER_FILE_BYTE, PreflightReport, _read_memory

    data = tmp_path / "data.csv"
    data.write_bytes(b"x" * 1000)
    need = 1000 * READ_MEMORY_PER_FILE_BYTE
    said = []
    for factor in (2.1, 1.9, 1.05, 0.95):  # available memory, in multiples of what the read needs
        report = PreflightReport()
        _read_memory(data, report, available=int(need * factor))
        said.append([(f.level, f.text) for f in report.findings])
    fits, half, tight, short = said
    assert fits == []
    assert [level for level, _ in half] == [level for level, _ in tight] == ["note"] and "little is left" in tight[0][1]
    assert [level for level, _ in short] == ["problem"] and "run out of memory reading it or training on it" in short[
        0
    ][1]
    assert f"{READ_MEMORY_PER_FILE_BYTE:g} times its size" in short[0][1]
    assert READ_MEMORY_PER_FILE_BYTE == 3.5  # read and fit: 10^7 bank rows 4.89 GB for 1.93 GB, 2*10^6 rows 3.6 times


def test_party_check_says_when_the_exact_samplers_cannot_be_loaded(tmp_path, monkeypatch):
    """Scale review F3: a host that cannot load OpenDP refuses every production request (nothing spent); the party
    check says so before the party joins."""
    import client._preflight as preflight_module
    from client._preflight import preflight

    from .test_party_hardening import _raising, _write_party

    setup, _ = _write_party(tmp_path)
    assert not any("exact samplers" in f.text for f in preflight(setup).findings)
    monkeypatch.setattr(preflight_module, "load_exact_samplers", _raising(Exception, "Unable to load OpenDP"))
    found = [f for f in preflight(setup).problems if "exact samplers cannot be loaded" in f.text]
    assert len(found) == 1 and "Unable to load OpenDP" in found[0].text


def _with_hold(paths, seconds: float) -> None:
    policy = paths["policy-path"]
    text = re.sub(r"(?m)^reply-after-seconds = .*$", "", policy.read_text())
    policy.write_text(text + f"\nreply-after-seconds = {seconds}\n")


def test_a_hold_shorter_than_the_largest_admitted_evaluation_is_a_problem_with_the_values_to_set(party, capsys):
    """An evaluation's hold counts from the end of its model checks; what it holds is the read and the prediction of
    the held-out rows, which grows with the trees the coordinator chooses up to max-evaluation-trees (review rev-coord
    C1).  The check knows the rows and the read's time: it says when the hold falls short, and what to set."""
    paths, _ = party
    _with_hold(paths, 0.001)
    code, lines = _check(paths, capsys)
    (problem,) = _problems(lines)
    assert code != 0
    assert "reply-after-seconds = 0.001 is shorter than 1.5 times an evaluation of the largest model" in problem, (
        problem
    )
    assert "max-evaluation-trees = 5000 of depth <= 8" in problem and "about 80 held-out rows" in problem, problem
    assert "raise reply-after-seconds to at least" in problem, problem
    _with_hold(paths, 60)
    code, lines = _check(paths, capsys)
    assert code == 0 and _problems(lines) == [], lines
    assert any("reply-after-seconds = 60 covers an evaluation of the largest model" in line for line in lines), lines


def test_the_largest_evaluation_estimate_and_the_trees_that_fit():
    """1,000,000 usable rows, a fifth held out, 5,000 trees of depth 8 and 512 parts of two classes: 200,000 x
    (5,000 x 9 + 512 x 2) steps, plus the routing tables' compile."""
    from client._hold_estimate import (
        COMPILE_SECONDS,
        MARGIN,
        PREDICT_SECONDS_PER_STEP,
        hold_shortfall,
        largest_evaluation_time,
    )

    limits = {"holdout_fraction": 0.2, "max_evaluation_trees": 5_000, "max_depth": 8, "max_evaluation_parts": 512}
    policy = PartyPolicy(party_id="p", **limits)
    estimate = largest_evaluation_time(policy, 2, 1_000_000, read_seconds=0.2)
    assert estimate.held_out_rows == 200_000
    steps = 200_000 * (5_000 * 9 + 512 * 2)
    assert estimate.predict_seconds == pytest.approx(steps * PREDICT_SECONDS_PER_STEP + COMPILE_SECONDS)
    assert estimate.seconds == pytest.approx(estimate.predict_seconds + 0.2)
    assert hold_shortfall(policy, estimate) is None  # no hold: nothing to say
    hold = 30.0
    text = hold_shortfall(PartyPolicy(party_id="p", reply_after_seconds=hold, **limits), estimate)
    assert f"to at least {int(np.ceil(MARGIN * estimate.seconds))}" in text, text
    fixed = 0.2 + COMPILE_SECONDS + 200_000 * 512 * 2 * PREDICT_SECONDS_PER_STEP
    fit = int((hold / MARGIN - fixed) // (200_000 * 9 * PREDICT_SECONDS_PER_STEP))
    assert fit >= 1 and f"lower max-evaluation-trees to at most {fit} " in text, text
    # the trees that fit do fit, with the margin
    smaller = PartyPolicy(party_id="p", reply_after_seconds=hold, **(limits | {"max_evaluation_trees": fit}))
    assert hold_shortfall(smaller, largest_evaluation_time(smaller, 2, 1_000_000, 0.2)) is None
    covered = MARGIN * estimate.seconds
    assert hold_shortfall(PartyPolicy(party_id="p", reply_after_seconds=covered + 1, **limits), estimate) is None


def test_the_estimate_s_constants_stay_above_what_the_benchmark_measured():
    """benchmarks/bench_hold_estimate.py measures prediction on distinct rows and the first call's compile (review
    rev-s63 R1: the first constant was calibrated on repeated rows, 2-3x low); its maxima are kept in
    results/hold_estimate.json, and the constants the check uses may not fall under them."""
    import json
    from pathlib import Path

    from client._hold_estimate import COMPILE_SECONDS, PREDICT_SECONDS_PER_STEP

    measured = json.loads(
        (Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "hold_estimate.json").read_text()
    )
    assert PREDICT_SECONDS_PER_STEP >= measured["max_seconds_per_step"]
    assert COMPILE_SECONDS >= measured["max_first_call_seconds"]


def test_more_than_one_approved_bundle_is_a_note_listing_each_with_its_label(party, capsys, monkeypatch, tmp_path):
    """Review rev-day2 U2: after an upgrade the old bundle's hash stayed approved, unnoticed."""
    paths, _ = party
    trusted = tmp_path / "trusted-apps.txt"
    old, new = "ab" * 32, "cd" * 32
    trusted.write_text(f"{old}  # edprf-fl 0.2.10 (git c1cb76d), approved 2026-11-30\n{new}\n", encoding="utf-8")
    monkeypatch.setenv("EDPRF_TRUSTED_APP_HASHES", str(trusted))
    code = main(["party", "check", "--node-config", _config(paths)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"note: trusted apps {trusted}: 2 approved bundles: {old[:16]}... # edprf-fl 0.2.10 (git c1cb76d)" in out
    assert f"{new[:16]}... (no label)" in out and "section 11, How to upgrade, step 5" in out

    trusted.write_text(f"{new}  # edprf-fl 0.2.11\n", encoding="utf-8")
    assert main(["party", "check", "--node-config", _config(paths), "--trusted-apps", str(trusted)]) == 0
    assert "1 approved bundle" in capsys.readouterr().out
    trusted.write_text("not-a-hash  # x\n", encoding="utf-8")
    assert main(["party", "check", "--node-config", _config(paths)]) == 1
    assert "line 1 is not a hex SHA-256" in capsys.readouterr().err


def test_without_a_list_of_approved_bundles_a_note_says_the_pin_was_not_checked(party, capsys, monkeypatch):
    """Review rev-pkg P2: an unpinned party's check printed "no problem found" and nothing about the pin."""
    paths, _ = party
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
    code, lines = _check(paths, capsys)
    assert code == 0 and lines[-1] == "hospital-a: no problem found", lines
    [note] = [line for line in lines if line.startswith("note: app pin: ")]
    assert "not checked (no --trusted-apps, no EDPRF_TRUSTED_APP_HASHES)" in note
    assert "runs every app bundle the coordinator submits" in note and "edprf party install-pin DIR" in note


def _flower_home_lines(paths, capsys) -> tuple[int, list[str]]:
    code, lines = _check(paths, capsys)
    return code, [line for line in lines if ": Flower home " in line]


def test_a_flower_home_the_account_cannot_create_is_a_problem_naming_the_variable(party, capsys, monkeypatch, tmp_path):
    """Review rev-pkg P5: as a service account with HOME=/nonexistent, party check found no problem, the SuperNode
    came online, and every run failed at the party (Flower unpacks each bundle under ~/.flwr/apps)."""
    paths, _ = party
    monkeypatch.delenv("FLWR_HOME", raising=False)
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("a file, not a directory\n")
    monkeypatch.setenv("HOME", str(not_a_dir))  # ~/.flwr cannot be created, whoever runs the check (root too)
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1
    assert line.startswith(f"problem: Flower home {not_a_dir / '.flwr'} (FLWR_HOME unset: ~/.flwr): cannot be created")
    assert f"{not_a_dir} is not a directory" in line
    for fix in ("Set FLWR_HOME in the environment of the SuperNode and of its SuperExec", "$PARTY/flwr, mode 0700"):
        assert fix in line, line
    assert "run this check as that account with the same environment" in line

    locked = tmp_path / "locked-home"  # a home the account cannot write (mode 0500: root writes it anyway, so the
    locked.mkdir(mode=0o500)  # account's view is the check's os.access, emulated here for an unprivileged one)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and os.fspath(p) != str(locked))
    monkeypatch.setenv("HOME", str(locked))
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1 and "cannot be created by " in line and f"{locked} is not writable by this account" in line

    monkeypatch.setenv("FLWR_HOME", str(locked))  # it exists, not writable
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1 and line.startswith(f"problem: Flower home {locked} (FLWR_HOME): {locked} is not writable by ")

    own = tmp_path / "party" / "flwr"
    monkeypatch.setenv("FLWR_HOME", str(own))  # the runbook's $PARTY/flwr, created by Flower at the first run
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 0 and line.startswith(f"ok: Flower home {own} (FLWR_HOME): ") and "can create it" in line
    assert not own.exists()  # the check creates nothing
    (own / "apps").mkdir(parents=True)
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 0 and line.startswith(f"ok: Flower home {own} (FLWR_HOME): writable by "), line
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and os.fspath(p) != str(own / "apps"))
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1 and f"{own / 'apps'} is not writable by " in line


def test_a_python_other_than_the_verified_one_is_a_note():
    """Review rev-pkg P9: on Python 3.13 the party installed and ran without a word that 3.11 is what is verified."""
    from client import check_python_version
    from client._preflight import PreflightReport

    other = check_python_version(PreflightReport(), (3, 13))
    assert [(f.level, f.subject) for f in other.findings] == [("note", "Python 3.13")]
    assert "tested and released on Python 3.11" in other.findings[0].line() and other.ok
    assert check_python_version(PreflightReport(), (3, 11)).findings == []


def test_a_flower_home_other_accounts_can_write_is_a_problem_naming_its_mode_and_owner(
    party, capsys, monkeypatch, tmp_path
):
    """Review rev-pkg2 R2: a 1777 Flower home was "ok"; Flower reuses an unpacked $FLWR_HOME/apps/<app> without
    checking it again, and a line another account appended to it ran in the party's ClientApps.  Modes are read
    from the stat bits (this runs as root, whom os.access lets write anything)."""
    paths, _ = party
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)  # unpinned: Flower's own unpacking is used
    me = f"(uid {os.geteuid()})"
    for mode in (0o777, 0o1777, 0o770):  # other- or group-writable; the sticky bit protects nothing inside
        shared = tmp_path / f"shared-{mode:o}"
        shared.mkdir()
        shared.chmod(mode)
        monkeypatch.setenv("FLWR_HOME", str(shared))
        code, [line] = _flower_home_lines(paths, capsys)
        assert code == 1, line
        assert line.startswith(f"problem: Flower home {shared} (FLWR_HOME): {shared} (mode {mode:04o}, owner "), line
        assert "is writable by other accounts" in line and "code another account puts there runs" in line
        for fix in ("mode 0700 (chmod 700", "deploy/README.md sections 2 and 3", "delete its apps/"):
            assert fix in line, line

    home = tmp_path / "party" / "flwr"
    (home / "apps").mkdir(parents=True)
    home.chmod(0o700)
    monkeypatch.setenv("FLWR_HOME", str(home))
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 0 and line.startswith(f"ok: Flower home {home} (FLWR_HOME): writable by "), line
    assert "its owner, and by no other account" in line
    (home / "apps").chmod(0o757)  # the home is private, its apps/ is not
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1 and f"{home / 'apps'} (mode 0757, owner " in line, line
    (home / "apps").chmod(0o700)
    os.chown(home / "apps", 65534, -1)  # another account's apps/, mode 0700: its owner can put code there
    code, [line] = _flower_home_lines(paths, capsys)
    assert code == 1 and f"{home / 'apps'} (mode 0700, owner " in line and "is not owned by " in line, line
    assert me in line.split("is not owned by ", 1)[1].split(":", 1)[0], line

    for mode in (0o777, 0o1777):  # a missing home in a directory others can write: any of them creates it first
        parent = tmp_path / f"open-{mode:o}"
        parent.mkdir()
        parent.chmod(mode)
        monkeypatch.setenv("FLWR_HOME", str(parent / "flwr"))
        code, [line] = _flower_home_lines(paths, capsys)
        assert code == 1, line
        assert f"does not exist, and {parent} (mode {mode:04o}, owner " in line, line
        assert "any of them could create it first" in line and "chmod 700" in line
        assert not (parent / "flwr").exists()


def test_with_a_list_of_approved_bundles_the_flower_home_findings_are_notes(party, capsys, monkeypatch, tmp_path):
    """Review rev-pkg2 R3: a pinned party trained five times, yet its check said the Flower home was a problem and
    exited 1.  The pin's launcher unpacks each approved bundle into a private temporary directory
    (edprf_fl/_pinned_clientapp.py; tests/federation/test_app_pin.py runs it with an unusable FLWR_HOME), so with a
    list the Flower home's findings are notes, for when the pin is removed."""
    paths, _ = party
    trusted = tmp_path / "trusted-apps.txt"
    trusted.write_text("ab" * 32 + "  # edprf-fl\n", encoding="utf-8")
    trusted.chmod(0o600)
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("a file, not a directory\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.delenv("FLWR_HOME", raising=False)
    monkeypatch.setenv("HOME", str(not_a_dir))  # ~/.flwr cannot be created (HOME=/nonexistent, as in the review)
    for home in (None, shared):
        if home is not None:
            monkeypatch.setenv("FLWR_HOME", str(home))
        for given in ("option", "variable", None):
            monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
            argv = ["party", "check", "--node-config", _config(paths)]
            if given == "option":
                argv += ["--trusted-apps", str(trusted)]
            elif given == "variable":
                monkeypatch.setenv("EDPRF_TRUSTED_APP_HASHES", str(trusted))
            capsys.readouterr()
            code = main(argv)
            captured = capsys.readouterr()
            [line] = [ln for ln in (captured.out + captured.err).splitlines() if ": Flower home " in ln]
            if given is None:  # unpinned: Flower's own unpacking uses it
                assert code == 1 and line.startswith("problem: "), line
                assert "Not used while the app pin runs" not in line
                continue
            assert code == 0, captured.err
            assert line.startswith("note: Flower home "), line
            assert "Not used while the app pin runs (its launcher, edprf_fl/_pinned_clientapp.py, unpacks each " in line
            assert "into a private temporary directory); needed if the pin is removed: " in line
            assert "hospital-a: no problem found" in captured.out


def test_a_list_of_approved_bundles_other_accounts_can_write_is_a_problem(party, capsys, monkeypatch, tmp_path):
    """Review rev-pkg2 R7: a 0666 trusted-apps.txt was "ok"; whoever can write it approves any bundle."""
    paths, _ = party
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
    listed = tmp_path / "lists" / "trusted-apps.txt"
    listed.parent.mkdir()
    listed.write_text("ab" * 32 + "  # edprf-fl\n", encoding="utf-8")

    def check() -> tuple[int, list[str]]:
        capsys.readouterr()
        code = main(["party", "check", "--node-config", _config(paths), "--trusted-apps", str(listed)])
        captured = capsys.readouterr()
        return code, [ln for ln in (captured.out + captured.err).splitlines() if ln.startswith("problem: trusted apps")]

    listed.chmod(0o600)
    listed.parent.chmod(0o755)
    assert check() == (0, [])
    for mode in (0o666, 0o620):
        listed.chmod(mode)
        code, [line] = check()
        assert code == 1 and f"the list (mode {mode:04o}, owner " in line, line
        assert "could approve any app bundle" in line and f"chmod go-w {listed}," in line, line
    listed.chmod(0o644)
    listed.parent.chmod(0o777)  # a directory others can write: the list can be replaced
    code, [line] = check()
    assert code == 1 and f"the directory {listed.parent} above it (mode 0777, owner " in line, line
    assert f"chmod go-w {listed.parent}," in line
    listed.parent.chmod(0o1777)  # with the sticky bit no other account can replace the file
    assert check() == (0, [])
    # review read67: a directory further up, and one a link leads into, can be renamed away as well
    listed.parent.chmod(0o755)
    (tmp_path / "inner").mkdir(mode=0o700)
    (tmp_path / "inner" / "lists").mkdir()
    listed.rename(tmp_path / "inner" / "lists" / "trusted-apps.txt")
    listed.symlink_to(tmp_path / "inner" / "lists" / "trusted-apps.txt")
    assert check() == (0, [])
    (tmp_path / "inner").chmod(0o777)
    try:
        code, [line] = check()
    finally:
        (tmp_path / "inner").chmod(0o700)
    assert code == 1 and f"the directory {tmp_path / 'inner'} above it (mode 0777, owner " in line, line


def test_a_locked_ledger_is_busy_for_party_check_never_to_be_restored(party, capsys):
    """Review rev-auto A12: a ledger another process held locked was a problem advising to restore it from its
    backup (replacing a live, correct ledger); it is a problem still (the check cannot read it), said as busy."""
    import sqlite3

    paths, _ = party
    BudgetLedger(paths["ledger-path"], 2.0).reserve("r1", "release", 1.0)
    db = sqlite3.connect(paths["ledger-path"], isolation_level=None)
    try:
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        db.execute("BEGIN EXCLUSIVE")
        db.execute("SELECT count(*) FROM spends").fetchall()
        code, lines = _check(paths, capsys)
    finally:
        db.close()
    assert code == 1
    [problem] = [line for line in _problems(lines) if str(paths["ledger-path"]) in line]
    assert "busy: another process holds the ledger's lock; retry" in problem and "restore" not in problem, problem


def test_a_launcher_of_another_version_first_on_the_path_is_a_note(party, capsys, monkeypatch, tmp_path):
    """Review rev-upgrade U3: a party that listed the new bundle but kept its 0.2.12 launcher was told at every
    message that it runs unpinned, and its check said "no problem found"; with this version's launcher, no note."""
    paths, _ = party
    monkeypatch.delenv("EDPRF_TRUSTED_APP_HASHES", raising=False)
    pinned = tmp_path / "pinned"
    assert main(["party", "install-pin", str(pinned)]) == 0
    monkeypatch.setenv("PATH", f"{pinned}:{os.environ['PATH']}")
    code, lines = _check(paths, capsys)
    assert code == 0 and not [x for x in lines if "another edprf-fl version" in x], lines

    launcher = pinned / "flwr-clientapp"
    launcher.write_text(launcher.read_text().replace("PINNED_MARKER", "OLD_MARKER"))  # as a 0.2.12 launcher differs
    code, lines = _check(paths, capsys)
    assert code == 0, lines
    [note] = [x for x in lines if "another edprf-fl version" in x]
    assert note.startswith(f"note: app pin: {launcher}, the flwr-clientapp first on this PATH, is an app-pin launcher")
    assert f"edprf party install-pin {pinned} --force" in note and "section 11" in note
