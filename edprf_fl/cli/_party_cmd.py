"""``edprf party check|init-policy|install-pin``: a hospital checks its set-up before joining, writes its policy,
and installs its app pin (:mod:`edprf_fl.cli._pin_install`).

``check`` takes the SuperNode's own ``--node-config`` string and runs the checks the ClientApp
runs when the SuperNode starts it (:mod:`client._preflight`): schema, policy (fingerprint, caps),
signing key (file and mode), ledger (state, remaining ε, opened read-only) and data file (header,
rows the schema's rules keep and drop); then the app pin's list (a note when none is given; a problem when other
accounts can write it) and whether Flower's home (``$FLWR_HOME``, where it unpacks the bundles) can be written by the
account that runs the check, and by no other (with a list, notes: the pin's launcher unpacks each approved bundle
into a private temporary directory).  Every problem is one line naming the file and the fix;
the exit status is 1 when there is one.  ``init-policy`` writes a policy whose
``schema-fingerprint`` is the schema's full fingerprint; with ``--force`` over an existing policy it
keeps that policy's settings but those given on the command line, and prints each setting it changes
(re-run to take a new schema's fingerprint, it must not reset a raised lifetime cap to the default).
All three are local: nothing is sent (``check --superlink`` makes one TLS handshake).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ._model_args import add_force_argument, refuse_existing_outputs
from ._pin_install import add_install_pin

if TYPE_CHECKING:
    from client import PartyPolicy

__all__ = ["PARTY_CHECK_FORMAT", "register"]

PARTY_CHECK_FORMAT = "edprf-party-check/1"
"""The ``format`` of ``edprf party check --json``'s object (docs/reference/party-check-json.md documents every key); a
key removed or changed in meaning gets a new number, a key added does not (review rev-auto A6)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "party",
        help="check a party's set-up before it joins, write its policy, or install its app pin",
        description="Check a party's set-up (schema, policy, keys, ledger, data) before it joins a federation, "
        "write its policy file, or install the launcher that runs approved app bundles only.",
    )
    inner = p.add_subparsers(dest="party_command", metavar="ACTION", required=True)
    check = inner.add_parser(
        "check",
        help="check schema, policy, signing key, ledger and data file of a SuperNode",
        description="Run the checks a party's ClientApp runs, on the files the SuperNode's "
        "--node-config names, and check that Flower can unpack app bundles under $FLWR_HOME (default ~/.flwr) as "
        "this account and that no other account can write there (with the app pin's list, --trusted-apps or "
        "$EDPRF_TRUSTED_APP_HASHES, notes only: the pin does not use it): run it as the party's service account, with the service's environment. Exit status 1 if any "
        "problem is found.",
    )
    check.add_argument(
        "--node-config",
        required=True,
        metavar="CONFIG",
        help="the SuperNode's --node-config string: \"data-path='...' schema-path='...' "
        "policy-path='...' ledger-path='...' [signing-key='...'] [data-separator=';' or 'tab'] [data-header=false]\"; "
        "data-separator is the data file's field separator (default ',', 'tab' for a tab), data-header=false reads a data file "
        "without a header line (columns: the schema's features in order, then the label)",
    )
    check.add_argument(
        "--auth-key",
        type=Path,
        metavar="PATH",
        help="also check the SuperNode's --auth-supernode-private-key (<id>.auth.key)",
    )
    check.add_argument(
        "--root-certificates",
        type=Path,
        metavar="PATH",
        help="also check the SuperNode's --root-certificates (the consortium's ca.crt)",
    )
    check.add_argument(
        "--superlink",
        metavar="HOST:PORT",
        help="with --root-certificates: also try the TLS handshake the SuperNode will make to this address (its "
        "--superlink), verifying the certificate presented there; nothing is sent",
    )
    check.add_argument(
        "--trusted-apps",
        type=Path,
        metavar="PATH",
        default=None,
        help="also check the app pin's list of approved bundle hashes (default: $EDPRF_TRUSTED_APP_HASHES when set; "
        "deploy/README.md section 6); more than one approved bundle is a note listing each with its label",
    )
    check.add_argument(
        "--quiet", "-q", action="store_true", help="print problems and notes only (no progress lines on stderr)"
    )
    check.add_argument(
        "--json",
        action="store_true",
        help=f"print one JSON object on stdout instead of the lines ({PARTY_CHECK_FORMAT!r}: ok, party_id and "
        "every check with its status and text; docs/reference/party-check-json.md); with --quiet it still lists "
        "every check (--quiet then only silences the progress lines on stderr)",
    )
    check.set_defaults(handler=run_check)
    from ._exit_text import exit_epilog

    init = inner.add_parser(
        "init-policy",
        epilog=exit_epilog("0 written; 1 an error (the policy exists without --force, the schema cannot be read)"),
        help="write a party's policy with the schema's full fingerprint",
        description="Write a policy TOML with safe defaults (those of "
        "deploy/policy.example.toml), the party's id and the schema's fingerprint. With --force over an "
        "existing policy (e.g. to take a new schema's fingerprint), the settings not given here keep that "
        "file's values, not the defaults, and each setting that changes is printed, old -> new.",
    )
    init.add_argument("--schema", required=True, type=Path, help="the federation's schema.toml")
    init.add_argument("--party-id", required=True, help="the party's id (1-64 of A-Z a-z 0-9 . _ -)")
    init.add_argument("--output", "-o", required=True, type=Path, help="where to write the policy TOML")
    init.add_argument(
        "--lifetime-epsilon-cap",
        type=float,
        default=None,
        help="total epsilon this party will ever spend (default 2.0)",
    )
    init.add_argument(
        "--max-release-epsilon", type=float, default=None, help="largest epsilon of one release (default 1.0)"
    )
    init.add_argument(
        "--max-evaluation-epsilon",
        type=float,
        default=None,
        help="largest epsilon of one noised evaluation; 0 refuses evaluations (default 0.1)",
    )
    init.add_argument(
        "--declared-rows",
        type=int,
        default=None,
        help="a training-row count the party agrees to publish (default 0: not declared)",
    )
    init.add_argument(
        "--reply-after-seconds",
        type=float,
        default=None,
        help="reply to train and evaluate messages no earlier than this, so that their time does not tell the "
        "data's size (default 0: at once; one value for every party of a consortium, below its round-timeout)",
    )
    add_force_argument(
        init,
        "overwrite --output if it exists; an existing policy keeps its values for every setting not given here "
        "(party-id and schema-fingerprint are always those given), and each change is printed; a file that "
        "does not read as a policy is refused: delete it to start from the defaults",
    )
    init.set_defaults(handler=run_init_policy)
    add_install_pin(inner)


def run_check(args: argparse.Namespace) -> int:
    """Handler of ``edprf party check``: the findings as lines, or with ``--json`` as one object on stdout; the exit
    status is 1 when there is a problem.  With ``--json`` an error that stops the check (a node config that does not
    read) is also one object on stdout, ``ok`` false, beside its line on stderr."""
    if not getattr(args, "json", False):
        return _check(args)
    try:
        return _check(args)
    except (ValueError, OSError) as exc:
        from ._output_streams import stdout_pipe_closed

        if not stdout_pipe_closed(exc):  # said on stderr by the entry point, with this exit status
            print(_check_json([], "", error=" ".join(str(exc).split()), status=getattr(exc, "edprf_exit_status", 1)))
        raise


def _check_json(findings: list, party_id: str, *, error: str | None = None, status: int | None = None) -> str:
    """``party check --json``'s object: every finding as ``status``/``subject``/``text`` (and the refusal code of one
    that makes the party refuse requests); ``error`` and its ``exit_status`` when the check could not run."""
    import json

    checks = [
        {
            "status": f.level,
            "subject": f.subject,
            "text": f.line().removeprefix(f"{f.level}: "),
            "refusal": f.refusal or None,
        }
        for f in findings
    ]
    problems = sum(f.level == "problem" for f in findings)
    shown = {
        "format": PARTY_CHECK_FORMAT,
        "ok": error is None and problems == 0,
        "party_id": party_id or None,
        "problems": problems,
        "notes": sum(f.level == "note" for f in findings),
        "checks": checks,
        "error": error,
        "exit_status": status if status is not None else (1 if problems else 0),
    }
    return json.dumps(shown, indent=2)


def _check(args: argparse.Namespace) -> int:
    from client import (
        check_flower_home,
        check_pin_launcher,
        check_python_version,
        check_supernode_files,
        check_trusted_apps,
        parse_node_config,
        preflight_configs,
        split_superlink_address,
    )
    from edprf_core.count_text import count_text
    from edprf_fl.simulation import seconds_text

    from ._model_args import say
    from ._pin_install import this_launcher_body, trusted_apps_path

    if args.superlink is not None:
        if args.root_certificates is None:
            raise ValueError("--superlink: give --root-certificates too (the handshake verifies with them)")
        split_superlink_address(args.superlink)  # a malformed address before any file is read
    reading: list[float] = []  # when the data file's read began (the check's long step, and its last)

    def progress(line: str) -> None:
        reading[:] = reading or [time.monotonic()]
        say(line)

    report = preflight_configs(parse_node_config(args.node_config), progress=None if args.quiet else progress)
    if reading:
        say(f"      checked in {seconds_text(time.monotonic() - reading[0])}")
    check_supernode_files(args.auth_key, args.root_certificates, report, superlink=args.superlink)
    trusted = trusted_apps_path(args.trusted_apps)
    check_trusted_apps(trusted, report)  # none given: a note that the pin was not checked
    check_pin_launcher(report, this_launcher_body())  # one of another version first on the PATH: reinstall it
    # where Flower unpacks the bundles, as this account (the service's) sees it; the pin's launcher unpacks each
    # approved bundle into a private temporary directory instead, so with a list its findings are notes
    check_flower_home(report, pinned=trusted is not None)
    check_python_version(report)
    if args.json:  # --quiet silences the progress lines only: the object lists every check
        print(_check_json(report.findings, report.party_id))
        return 0 if report.ok else 1
    for finding in report.findings:
        if args.quiet and finding.level == "ok":
            continue
        stream = sys.stderr if finding.level == "problem" else sys.stdout
        print(finding.line(), file=stream)
    who = report.party_id or "the party"
    if report.ok:
        print(f"{who}: no problem found")
        return 0
    print(
        f"{who}: {count_text(len(report.problems), 'problem')}; fix them before starting the SuperNode", file=sys.stderr
    )
    return 1


def run_init_policy(args: argparse.Namespace) -> int:
    from client import PartyPolicy
    from edprf_core import load_schema
    from protocol import save_atomic

    schema = load_schema(args.schema)
    if schema.is_draft:
        raise ValueError(
            f"{args.schema} is drafted from data ({schema.draft_note}): replace its bounds and lists with "
            "public knowledge, and say where each came from in its source, first"
        )
    out: Path = args.output
    refuse_existing_outputs([(f"--output {out}", out)], args.force)
    previous = _previous_policy(out)
    chosen = {
        name: getattr(args, name)
        for name in (
            "lifetime_epsilon_cap",
            "max_release_epsilon",
            "max_evaluation_epsilon",
            "declared_rows",
            "reply_after_seconds",
        )
        if getattr(args, name) is not None
    }
    given = {"party_id": args.party_id, "schema_fingerprint": schema.fingerprint, **chosen}
    policy = replace(previous, **given) if previous is not None else PartyPolicy(**given)
    header = (
        f"# policy of party {policy.party_id!r}, written by `edprf party init-policy` for the schema "
        f"{args.schema}\n# every key: deploy/policy.example.toml; check the whole set-up with "
        "`edprf party check --node-config ...`\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    save_atomic(out, (header + policy.to_toml()).encode("utf-8"), mode=0o644)
    print(f"wrote {out}: party-id {policy.party_id!r}, schema-fingerprint {schema.fingerprint}")
    if previous is not None:
        changes = _changed_settings(previous, policy)
        kept = "the replaced policy's other settings kept"
        print(f"{kept}; changed:" if changes else f"{kept}; no setting changed")
        for line in changes:
            print(f"  {line}")
        if previous.party_id != policy.party_id:
            print(
                f"note: the party-id changed ({previous.party_id!r} -> {policy.party_id!r}): a ledger written for "
                f"{previous.party_id!r} is refused under the new id (a ledger belongs to its party; a new one would "
                "start at 0), "
                "and its release-signing key and the coordinator's registration name the old id; keep the old id "
                "unless the consortium re-onboards this party"
            )
    return 0


def _previous_policy(out: Path) -> PartyPolicy | None:
    """The policy ``--force`` replaces, or None when there is no file at ``out``.

    Raises
    ------
    ValueError
        ``out`` exists but does not read as a policy: its settings cannot be kept, and replacing it
        with the defaults could lower its caps unnoticed.
    """
    from client import load_policy

    if not out.exists():
        return None
    try:
        return load_policy(out)
    except ValueError as exc:
        raise ValueError(
            f"--output {out}: --force keeps the settings of the policy it replaces, but this file does not read "
            f"as a policy ({exc}); fix it, or delete it to start from the defaults"
        ) from None


def _changed_settings(old: PartyPolicy, new: PartyPolicy) -> list[str]:
    """``key: old -> new`` for each setting whose value differs, in the policy's order."""
    from edprf_core.config_checks import kebab

    before, after = asdict(old), asdict(new)
    return [f"{kebab(k)}: {before[k]!r} -> {after[k]!r}" for k in after if before[k] != after[k]]
