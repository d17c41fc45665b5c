"""``edprf consortium``: a whole consortium on this host, without Docker, in one command.

It lays out (once, then reuses) a consortium CA and the SuperLink's certificate, N parties each
with its own data share, schema, policy, ledger, SuperNode authentication key and release-signing
key; checks every party as ``edprf party check`` does; starts a SuperLink with TLS and SuperNode
authentication, a separate SuperExec and N SuperNodes on 127.0.0.1 (each on its own port);
registers the parties' keys; runs the coordinator as ``edprf run`` does; prints the summary; stops
everything it started, on success, on failure, on Ctrl-C, on SIGTERM and on SIGHUP (each process leads
its own process group; whatever outlives the grace period is killed by pid and start time; it then
checks that nothing is left); and only then prints each party's spent budget, from its ledger and the
ledger's anchor (the ClientApps write the ledgers until they exit).  It holds ``--dir`` (an exclusive
lock on ``consortium.lock``) while it runs: a second invocation on the same ``--dir`` is refused.

Files (all under ``--dir``, mode 0700 directories, private keys and secrets 0600)::

    pki/ca.key ca.crt server.key server.pem         consortium CA, SuperLink certificate
    coordinator/schema.toml test.csv validation.csv party-keys/<id>.pub.pem
    parties/<id>/data.csv schema.toml policy.toml ledger.sqlite keys/<id>.*
    flwr-home/                                      Flower homes, SuperExec secret
    logs/<process>.log  superlink.db  runs/<time>/  report.json and global-model.edprf per run
    logs/coordinator.log                            each invocation's followed run log (what edprf run showed)
    consortium.lock                                 held by the running invocation (its pid inside)

The default ``--dir`` is outside any repository (``$XDG_STATE_HOME/edprf/consortium``).
Ledgers persist between invocations: each run spends from the same lifetime caps, as at real
parties.  The SuperLink's database is new per invocation (its node registrations are redone).
A demonstration with public example data; real parties each run their own SuperNode
(deploy/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._arg_types import CLI_DEPTH_LIMIT, integer, non_negative_finite, positive_finite

if TYPE_CHECKING:
    from server import CoordinatorConfig

__all__ = ["default_dir", "register"]

_NAME_UNSAFE = set(" '\"=")
_LOCK = "consortium.lock"
_DEFAULTS = {"n-trees": 2, "max-depth": 4, "evaluation-epsilon": 0.0}
"""Defaults of this command's run settings (``--epsilon``'s is the coordinator's own, ``server.CoordinatorConfig``)."""
_SETTINGS = ("epsilon", "evaluation-epsilon", "n-trees", "max-depth")
"""Run config keys this command has an option for (``--epsilon`` for ``epsilon``): given either way, the same."""


def default_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "edprf" / "consortium"


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "consortium",
        epilog=exit_epilog(
            "0 the run completed; 1 it failed or was refused (a party's budget, a check), a process listened beyond "
            "loopback or was left running, or --fail-on-refusal could not read the run's report.json; 6 with "
            "--fail-on-refusal: the run completed, but a party refused or was silent; 75 --dir is in use by another "
            "edprf consortium: retry later"
        ),
        help="run a local consortium (TLS, SuperNode authentication, N parties) "
        "on 127.0.0.1 without Docker, then stop it",
        description="Create the CA, certificates and N parties (data share, schema, policy, ledger, "
        "keys), start a TLS SuperLink with SuperNode authentication and N SuperNodes on "
        "127.0.0.1, run the coordinator, print the summary and stop everything.",
    )
    p.add_argument("--parties", type=integer(1, 26), default=3, help="number of parties, 1 to 26 (default 3)")
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        help=f"where everything is kept (default {default_dir()}); reused by later invocations",
    )
    p.add_argument("--dataset", default="wall_robot_navigation", help="embedded example data set to split")
    p.add_argument(
        "--epsilon",
        type=positive_finite,
        default=None,
        help="epsilon of each party's release, a positive finite number (default: the coordinator's default, 1)",
    )
    p.add_argument(  # default None: an option given can be told from its default (--run-config may not contradict it)
        "--n-trees",
        type=integer(1),
        default=None,
        help=f"trees each party releases, >= 1 (default {_DEFAULTS['n-trees']}, a party's federated setting, unlike "
        "the central estimator's 'auto': the coordinator asks every party for the same number, never chosen from "
        "row counts; bins are the coordinator's 20, one grid for every party so that the trees merge)",
    )
    p.add_argument(
        "--max-depth",
        type=integer(1, CLI_DEPTH_LIMIT),
        default=None,
        help=f"deepest tree, 1 to {CLI_DEPTH_LIMIT} (default {_DEFAULTS['max-depth']})",
    )
    p.add_argument(
        "--evaluation-epsilon",
        type=non_negative_finite,
        default=None,
        help=f"epsilon of each party's noised held-out evaluation; 0 skips it (default {_DEFAULTS['evaluation-epsilon']:g})",
    )
    p.add_argument(
        "--run-config",
        default="",
        metavar="CONFIG",
        help="more run config for the coordinator, e.g. \"request-tag='trial-1'\"; a key of an option above "
        "(epsilon=0.5) is used as that option is, by the parties' policy check too, and may not contradict it",
    )
    p.add_argument(
        "--app",
        type=Path,
        default=None,
        help="the edprf-fl source directory to submit (default: the source tree of an editable install, else $EDPRF_SRC, else the working directory)",
    )
    from ._run_cmd import add_script_options

    add_script_options(p)
    p.set_defaults(handler=run_consortium)


# ----------------------------------------------------------------------------- files
def _party_ids(n: int) -> list[str]:
    if not 1 <= n <= 26:
        raise ValueError(f"--parties: expected 1 to 26, got {n}")
    return [f"hospital-{chr(ord('a') + i)}" for i in range(n)]


def _quiet_edprf(argv: list[str], log: Path) -> None:
    """An `edprf` subcommand in this process, its output appended to ``log``."""
    from ._main import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(argv)
    from ._flower_processes import open_log

    with open_log(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ edprf {' '.join(argv)}\n{buffer.getvalue()}")
    if code != 0:
        raise ValueError(f"edprf {' '.join(argv)} failed: {buffer.getvalue().strip()[-500:]}")


def _state_dir(given: Path | None) -> Path:
    """``--dir`` (or the default), created with mode 0700.

    Raises
    ------
    ValueError
        The default cannot be created: says where it comes from (``$XDG_STATE_HOME``, else ``~/.local/state``) and
        that ``--dir`` chooses another (review rev-pkg P14: a service account without a home got only
        "/nonexistent: Permission denied").
    OSError
        The given ``--dir`` cannot be created.
    """
    if given is not None:
        return _private_dir(given.resolve())
    path = default_dir().resolve()
    try:
        return _private_dir(path)
    except OSError as exc:
        state = os.environ.get("XDG_STATE_HOME")
        origin = (
            f"$XDG_STATE_HOME/edprf/consortium (XDG_STATE_HOME={state})"
            if state
            else f"~/.local/state/edprf/consortium (XDG_STATE_HOME is not set; HOME={Path.home()})"
        )
        what = exc.strerror or str(exc)
        if exc.filename and Path(exc.filename) != path:  # the parent that could not be made: /nonexistent
            what = f"{exc.filename}: {what}"
        raise ValueError(
            f"cannot create the default directory {path} ({what}); it is {origin}: give --dir DIR, a directory this "
            "user may create, or set XDG_STATE_HOME"
        ) from None


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def lay_out(root: Path, party_ids: list[str], dataset: str, log: Path, seed: int = 0) -> dict:
    """Create what is missing (CA, certificate, coordinator files, parties); return the layout."""
    import numpy as np

    from client import PartyPolicy
    from edprf_core import load_embedded

    from ._certs import party_files

    marker = root / "consortium.json"
    wanted = {"dataset": dataset, "parties": party_ids, "seed": seed}
    if marker.is_file() and json.loads(marker.read_text()) != wanted:
        raise ValueError(f"{root} holds another consortium ({marker.read_text().strip()}); give another --dir")
    pki, coordinator, parties_dir = root / "pki", root / "coordinator", _private_dir(root / "parties")
    if not (pki / "ca.crt").is_file():
        _quiet_edprf(["certs", "init", "--out", str(pki), "--ca-name", "edprf local consortium CA"], log)
    if not (pki / "server.pem").is_file():
        _quiet_edprf(["certs", "server", "--out", str(pki), "--san", "IP:127.0.0.1", "--san", "DNS:localhost"], log)
    X, y, schema = load_embedded(dataset)
    label = schema.label.column
    frame = X.assign(**{label: y.to_numpy()})
    rows = np.random.default_rng(seed).permutation(len(X))
    n_test, n_val = round(0.2 * len(rows)), round(0.1 * len(rows))
    _private_dir(coordinator / "party-keys")
    if not (coordinator / "schema.toml").is_file():
        schema.save(coordinator / "schema.toml")
        frame.iloc[rows[:n_test]].to_csv(coordinator / "test.csv", index=False)
        frame.iloc[rows[n_test : n_test + n_val]].to_csv(coordinator / "validation.csv", index=False)
    shares = np.array_split(rows[n_test + n_val :], len(party_ids))
    parties = {}
    for party_id, share in zip(party_ids, shares, strict=True):
        d = _private_dir(parties_dir / party_id)
        keys = party_files(d / "keys", party_id)
        if not (d / "policy.toml").is_file():
            frame.iloc[share].to_csv(d / "data.csv", index=False)
            schema.save(d / "schema.toml")
            policy = PartyPolicy(party_id=party_id, schema_fingerprint=schema.fingerprint)
            (d / "policy.toml").write_text(policy.to_toml(), encoding="utf-8")
        key_files = (keys.auth_key, keys.auth_pub, keys.signing_key, keys.signing_pub)
        absent = [p.name for p in key_files if not p.is_file()]
        if len(absent) == len(key_files):
            _quiet_edprf(["certs", "party", "--out", str(d / "keys"), "--party-id", party_id], log)
        elif absent:  # `edprf certs party` would refuse (its --force is not this command's)
            raise ValueError(
                f"{d / 'keys'}: {', '.join(absent)} missing beside the party's other keys; restore it from a backup, "
                f"or delete {d / 'keys'} and run this command again to give {party_id} new keys (its SuperNode key "
                "is registered anew by every run, its signing key copied to the coordinator)"
            )
        (coordinator / "party-keys" / keys.signing_pub.name).write_bytes(keys.signing_pub.read_bytes())
        parties[party_id] = {
            "data-path": d / "data.csv",
            "schema-path": d / "schema.toml",
            "policy-path": d / "policy.toml",
            "ledger-path": d / "ledger.sqlite",
            "signing-key": keys.signing_key,
            "auth-key": keys.auth_key,
            "auth-pub": keys.auth_pub,
        }
    marker.write_text(json.dumps(wanted), encoding="utf-8")
    return {"pki": pki, "coordinator": coordinator, "parties": parties}


def node_config(paths: dict[str, Path]) -> str:
    """The SuperNode's ``--node-config`` (values may hold no spaces, quotes or '=')."""
    keys = ("data-path", "schema-path", "policy-path", "ledger-path", "signing-key")
    for key in keys:
        if _NAME_UNSAFE & set(str(paths[key])):
            raise ValueError(
                f"{paths[key]}: a node-config path may not contain spaces, quotes or '='; choose a --dir without them"
            )
    return " ".join(f"{key}='{paths[key]}'" for key in keys)


def config_text(values: dict) -> str:
    """A run config as `flwr run --run-config` reads it (strings as TOML literal strings)."""

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if "'" in str(v):
            raise ValueError(f"run config value {v!r}: may not contain a single quote")
        return f"'{v}'"

    return " ".join(f"{key}={value(v)}" for key, v in values.items())


def _source_tree() -> Path:
    """The directory above this package: the source tree under an editable install, site-packages otherwise."""
    return Path(__file__).resolve().parents[2]


def _app_dir(given: Path | None) -> Path:
    """The edprf-fl source directory to submit: ``--app``, else the first of the source tree this command runs
    from (an editable install), ``$EDPRF_SRC`` (the runbook's variable) and the working directory that holds
    the app's ``pyproject.toml`` (a plain install keeps no source tree)."""
    if given is not None:
        candidates = [given]
    else:
        candidates = [_source_tree()]
        if os.environ.get("EDPRF_SRC"):
            candidates.append(Path(os.environ["EDPRF_SRC"]))
        candidates.append(Path.cwd())
    for app in candidates:
        pyproject = app / "pyproject.toml"
        if pyproject.is_file() and "[tool.flwr.app]" in pyproject.read_text(encoding="utf-8"):
            return app
    tried = ", ".join(str(a) for a in dict.fromkeys(candidates))  # each place once
    raise ValueError(
        f"no edprf-fl source directory (a pyproject.toml with [tool.flwr.app]) in {tried}; give --app <edprf-fl "
        "source directory>, set EDPRF_SRC to it, or run from it (a plain pip install keeps no source tree)"
    )


# ----------------------------------------------------------------------------- the run
def _resending(parties: dict, request_tag: str) -> set[str]:
    """The parties whose ledger holds a release made for ``request_tag``'s train request: they resend it and
    spend nothing (``client.Party.train``), whatever remains of their cap.  Read-only; a ledger that cannot be
    read counts as holding none."""
    from client import EntryState, read_ledger_readonly
    from protocol.messages import train_request_id

    if not request_tag:
        return set()
    request_id = train_request_id(request_tag)
    found = set()
    for party_id, paths in parties.items():
        ledger = Path(paths["ledger-path"])
        try:
            entries = read_ledger_readonly(ledger) if ledger.is_file() else []
        except ValueError:
            continue
        if any(e.request_id == request_id and e.kind == "release" and e.state == EntryState.RELEASED for e in entries):
            found.add(party_id)
    return found


def _check_parties(parties: dict, resending: Collection[str] = ()) -> None:
    """Run each party's own check (``edprf party check``) and refuse the run on any problem.

    A party in ``resending`` (:func:`_resending`: its ledger holds a release made for the run's request-tag) may
    have an exhausted budget: it resends that release and spends nothing.
    """
    from client import parse_node_config, preflight_configs
    from edprf_core.count_text import count_text

    problems, exhausted_resending = [], []
    for party_id, paths in parties.items():
        report = preflight_configs(parse_node_config(node_config(paths)))
        for finding in report.problems:
            if party_id in resending and finding.refusal == "budget_exhausted":
                exhausted_resending.append(party_id)
            else:
                problems.append(f"{party_id}: {finding.line()}")
    if problems:
        exhausted = any("budget_exhausted" in line for line in problems)
        raise ValueError(
            "party check failed:\n  "
            + "\n  ".join(problems)
            + (
                "\n(trial parties under --dir: another --dir sets up fresh ones; a party's lifetime cap is its own "
                "to raise, in parties/<party>/policy.toml)"
                if exhausted
                else ""
            )
        )
    print(f"[2/5] party check: {count_text(len(parties), 'party', 'parties')}, no problem found", flush=True)
    if exhausted_resending:
        print(
            f"      {', '.join(exhausted_resending)}: lifetime cap reached; "
            f"{'each holds' if len(exhausted_resending) > 1 else 'it holds'} a release made for the request-tag, "
            "which it resends (spending nothing), and refuses anything else (budget_exhausted)",
            flush=True,
        )


def _run_settings(args: argparse.Namespace, run_values: dict) -> CoordinatorConfig:
    """The settings the run will use, read from ``run_values`` (this command's run config, ``--run-config``
    merged last) as the coordinator reads them.

    Raises
    ------
    ValueError
        A value the coordinator would refuse (after every process came up), named as ``--run-config`` gave it;
        or an option and its ``--run-config`` key that disagree (``--epsilon 0.5`` and ``epsilon=1.5``): which
        one was meant is not guessed.
    """
    from server import CoordinatorConfig

    try:
        settings = CoordinatorConfig.from_run_config(run_values)
    except ValueError as exc:
        raise ValueError(f"--run-config {str(exc).removeprefix('run config ')}") from None
    for key in _SETTINGS:
        given, used = getattr(args, key.replace("-", "_")), getattr(settings, key.replace("-", "_"))
        if given is not None and given != used:
            raise ValueError(f"--{key} {given} and --run-config {key}={used} disagree; give {key} once")
    return settings


def _check_request(
    parties: dict,
    epsilon: float,
    evaluation_epsilon: float,
    from_run_config: Collection[str] = (),
    resending: Collection[str] = (),
) -> None:
    """Refuse, before any process starts, a run the parties' policies would refuse: an epsilon below a
    party's min-epsilon or finer than 1e-6, ``epsilon`` above its max-release-epsilon,
    ``evaluation_epsilon`` above its max-evaluation-epsilon (each party would refuse the request after the
    SuperLink and SuperNodes came up).  The lifetime cap is left to the parties: what a ledger has spent
    shows in the summary.

    Parameters
    ----------
    parties : dict
        The layout's parties (their ``policy-path``).
    epsilon, evaluation_epsilon : float
        What the run will ask each party for (``evaluation_epsilon`` 0: no evaluation).
    from_run_config : collection of str
        The keys (``epsilon``, ``evaluation-epsilon``) that ``--run-config`` gave: named so in the messages.
    resending : collection of str
        Parties whose ledger holds a release made for the run's ``request-tag`` (:func:`_resending`): what
        remains of their cap is not checked (they resend that release and spend nothing).

    Raises
    ------
    ValueError
        One line per party and problem, naming where the value came from (``--epsilon 5``,
        ``--run-config epsilon=5``).
    """
    from client import exact_epsilon, format_epsilon, load_policy, micro_epsilon, read_budget
    from edprf_core.count_text import count_text

    def said(key: str, value: float, spec: str = "g") -> str:
        return f"--run-config {key}={value:{spec}}" if key in from_run_config else f"--{key} {value:{spec}}"

    asked = [("epsilon", epsilon)] + ([("evaluation-epsilon", evaluation_epsilon)] if evaluation_epsilon else [])
    problems = []
    for party_id, paths in parties.items():
        policy = load_policy(paths["policy-path"])
        for key, value in asked:  # the party's own first checks (client.Party._check_epsilon)
            if value < policy.min_epsilon:
                problems.append(
                    f"{party_id}: {said(key, value)} is below its policy's min-epsilon {policy.min_epsilon:g}"
                )
            elif micro_epsilon(value) is None:
                problems.append(
                    f"{party_id}: {said(key, value, '')} is not a multiple of 1e-6 (ledgers count micro-epsilon)"
                )
        if epsilon > policy.max_release_epsilon:
            problems.append(
                f"{party_id}: {said('epsilon', epsilon)} exceeds its policy's max-release-epsilon "
                f"{policy.max_release_epsilon:g}"
            )
        if evaluation_epsilon > policy.max_evaluation_epsilon:
            problems.append(
                f"{party_id}: {said('evaluation-epsilon', evaluation_epsilon)} exceeds its policy's "
                f"max-evaluation-epsilon {policy.max_evaluation_epsilon:g}"
            )
        left = (
            None
            if party_id in resending
            else read_budget(Path(paths["ledger-path"]), policy.lifetime_epsilon_cap).remaining
        )
        if left is not None and left < exact_epsilon(epsilon):  # the party's reservation would be refused
            problems.append(
                f"{party_id}: {said('epsilon', epsilon)} exceeds what remains of its lifetime cap "
                f"({format_epsilon(left)} of {policy.lifetime_epsilon_cap:g}; budget_exhausted): ask for at most "
                "that, or set up fresh trial parties with another --dir"
            )
    if problems:
        refusing = len({line.split(":", 1)[0] for line in problems})
        raise ValueError(
            f"{refusing} of {count_text(len(parties), 'party', 'parties')} would refuse this run, by their policies:\n  "
            + "\n  ".join(problems)
            + "\n(the policies are parties/<party>/policy.toml under --dir; a party's own policy is its to set)"
        )


def _budget_lines(parties: dict) -> list[str]:
    """Each party's spent epsilon, from its ledger and the ledger's anchor (as `edprf party check` reads them).

    Read once every process has exited (the ClientApps write the ledgers).  A ledger that cannot be read is
    "unknown (<reason>)", never 0; where the anchor records more than the ledger holds, the line says so (the
    party counts the difference as spent before its next request).
    """
    from client import LedgerStatus, format_epsilon, load_policy, read_budget

    lines = []
    for party_id, paths in parties.items():
        try:
            cap_value: float | None = load_policy(paths["policy-path"]).lifetime_epsilon_cap
            cap = f"{cap_value:g}"
        except (ValueError, OSError) as exc:
            cap_value, cap = None, f"unknown ({_one_line(exc)})"
        state = read_budget(Path(paths["ledger-path"]), cap_value)
        anchor_name = state.anchor_path.name
        notes = [f"anchor unreadable: {state.anchor_error}"] if state.anchor_error else []
        if state.status is LedgerStatus.NOT_CREATED:
            spent_text = "0 (no ledger yet)"
        elif state.in_ledger is None:  # absent with an anchor, or unreadable: what the ledger holds is unknown
            spent_text = f"unknown ({state.ledger_error})"
            if state.anchor is not None:
                notes.append(
                    f"its anchor {anchor_name} records {format_epsilon(state.anchor.spent)} spent, which "
                    "the party counts as spent"
                )
        else:
            spent_text = format_epsilon(state.in_ledger)
            if state.carried:
                notes.append(
                    f"its anchor {anchor_name} records {format_epsilon(state.carried)} more (restored from "
                    "a backup, or replaced?), which the party counts as spent before its next request"
                )
        if state.over_cap is not None:
            notes.append(state.over_cap_text())
        lines.append(f"  {party_id}: spent {spent_text} of its lifetime cap {cap}" + "".join(f"; {n}" for n in notes))
    return lines


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@dataclass
class _Outcome:
    """What one invocation did, filled in as it goes, for ``--json``'s object and ``--fail-on-refusal``."""

    output_dir: Path | None = None
    request_tag: str = ""
    run_id: int | None = None
    run_code: int | None = None
    """``edprf run``'s exit status for the run (None: no run was followed)."""
    report: Path | None = None
    """This run's ``report.json`` (None: it wrote none, or it could not be read)."""
    errors: list[str] = field(default_factory=list)


def run_consortium(args: argparse.Namespace) -> int:
    """``edprf consortium``: :func:`_run_consortium`, then ``--fail-on-refusal``'s status and ``--json``'s object
    (review rev-auto A6, A7)."""
    from ._run_cmd import run_status
    from ._run_summary import json_output, print_summary, refusal_status, run_summary
    from ._stop_signals import exit_status

    outcome = _Outcome()

    def summary(code: int, status: str | None = None) -> None:
        if args.json:
            followed = outcome.run_code if outcome.run_code is not None else code  # the run's, else the command's
            print_summary(
                run_summary(
                    status=status or run_status(followed, submitted=True),
                    run_id=outcome.run_id,
                    request_tag=outcome.request_tag,
                    output_dir=outcome.output_dir,
                    report_path=outcome.report,
                    exit_status=code,
                    error="; ".join(outcome.errors) or None,
                ),
                stdout,
            )

    with json_output(args.json) as stdout:
        try:
            code = _run_consortium(args, outcome)
        except KeyboardInterrupt as interrupt:  # before any process started (after, _run_in stops them)
            summary(exit_status(interrupt), "stopped")
            raise
        except (ValueError, OSError) as exc:
            outcome.errors.append(_one_line(exc))
            summary(getattr(exc, "edprf_exit_status", 1), run_status(1, submitted=outcome.run_code is not None))
            raise
        code, said = refusal_status(code, outcome.report, args.fail_on_refusal)
        if said:
            print(f"edprf consortium: {said}", file=sys.stderr, flush=True)
            outcome.errors.append(said)
        summary(code)
    return code


def _run_consortium(args: argparse.Namespace, outcome: _Outcome) -> int:
    from ._flower_processes import missing_flower_tools
    from ._run_cmd import FLOWER_INSTALL

    missing = missing_flower_tools()
    if missing:
        raise ValueError(
            f"{', '.join(missing)} not installed next to {sys.executable}: this command runs a federation and needs "
            f"Flower's commands: {FLOWER_INSTALL} into that Python's environment"
        )
    app = _app_dir(args.app)
    root = _state_dir(args.dir)
    if _NAME_UNSAFE & set(str(root)):
        raise ValueError(f"--dir {root}: may not contain spaces, quotes or '=' (Flower's --node-config)")
    with _exclusive(root):
        return _run_in(root, app, args, outcome)


@contextlib.contextmanager
def _exclusive(root: Path):
    """Hold ``root`` for this command's lifetime: a second `edprf consortium` on it is refused (two would share
    the SuperLink's database, the ports' registrations and the ledgers, and stop each other's processes), with
    :class:`DirectoryBusy` (exit 75, retry later, as ``edprf budget``'s busy ledger)."""
    from edprf_fl import hold_directory

    from ._busy_error import DirectoryBusy

    refusal = lambda who: f"{root} is in use by another edprf consortium ({who}); wait for it or give another --dir"
    held = False
    try:
        with hold_directory(root, _LOCK, refusal):
            held = True
            yield
    except ValueError as exc:
        if held:  # the command's own error, not the lock's
            raise
        raise DirectoryBusy(str(exc)) from None  # another consortium holds it: retry later (75, review)


def _run_in(root: Path, app: Path, args: argparse.Namespace, outcome: _Outcome | None = None) -> int:
    from edprf_core.count_text import count_text

    from ._flower_processes import Deployment, Federation, FlowerProcessError, ListenerWatch, Tls, flower_env
    from ._run_cmd import RunProgress, _request_tag, run_and_follow
    from ._run_summary import run_report, warn_refusals
    from ._stop_signals import exit_status, stop_signals

    outcome = outcome if outcome is not None else _Outcome()

    party_ids = _party_ids(args.parties)
    from client import parse_node_config

    extra = parse_node_config(args.run_config, "--run-config") if args.run_config else {}  # Flower's own parser
    # the run's output directory: the run config's (after --run-config), absolute (a relative one is taken from
    # where the command runs, not from the ServerApp's working directory); the summary reads it
    out = Path(str(extra.get("output-dir") or root / "runs" / time.strftime("%Y%m%d-%H%M%S"))).absolute()
    if "output-dir" in extra:
        extra["output-dir"] = str(out)
    outcome.output_dir = out
    setup_log = root / "logs" / "setup.log"
    setup_log.parent.mkdir(exist_ok=True)
    layout = lay_out(root, party_ids, args.dataset, setup_log)
    parties, pki, coordinator = layout["parties"], layout["pki"], layout["coordinator"]
    print(
        f"[1/5] {root}: CA and SuperLink certificate in pki/, {count_text(len(parties), 'party', 'parties')} in parties/ "
        f"(data share, schema, policy, ledger, keys)",
        flush=True,
    )
    given = {key: getattr(args, key.replace("-", "_")) for key in _SETTINGS}
    run_values = {
        "schema-path": coordinator / "schema.toml",
        "keys-dir": coordinator / "party-keys",
        "output-dir": out,
        "test-data-path": coordinator / "test.csv",
        "validation-data-path": coordinator / "validation.csv",
        "min-parties": len(parties),
        "expected-parties": len(parties),
        # an option not given: this command's default; epsilon: left to the coordinator's own (server.CoordinatorConfig)
        **{key: value if value is not None else _DEFAULTS[key] for key, value in given.items() if key in _DEFAULTS},
        **({"epsilon": args.epsilon} if args.epsilon is not None else {}),
        **extra,  # wins: the pre-flight check and the summary use what the run will use
    }
    settings = _run_settings(args, {k: str(v) if isinstance(v, Path) else v for k, v in run_values.items()})
    resending = _resending(parties, str(run_values.get("request-tag") or ""))
    _check_parties(parties, resending)
    for key in ("min-parties", "expected-parties"):  # more than --parties: the run would wait for parties never coming
        if getattr(settings, key.replace("-", "_")) > len(parties):
            raise ValueError(f"--run-config {key}: expected at most {len(parties)} (--parties), got {extra[key]!r}")
    # exact metrics spend no epsilon: the parties check no evaluation epsilon then
    evaluation_epsilon = 0.0 if settings.exact_metrics else settings.evaluation_epsilon
    _check_request(
        parties,
        settings.epsilon,
        evaluation_epsilon,
        from_run_config=extra.keys(),
        resending=resending,
    )
    for stale in root.glob("superlink.db*"):
        stale.unlink()  # node registrations are redone on every invocation; ledgers are kept
    dep = Deployment(root=root, env=flower_env(root))
    code = 1
    with stop_signals():  # SIGTERM and SIGHUP stop every process as Ctrl-C does
        try:
            fed = Federation(
                dep,
                connection="consortium",
                tls=Tls(pki / "ca.crt", pki / "server.pem", pki / "server.key"),
                supernode_auth=True,
                separate_superexec=True,
            )
            fed.start_superlink(root / "superlink.db")
            cli_env = fed.write_cli_config()
            node_ids = {p: fed.register(paths["auth-pub"]) for p, paths in parties.items()}
            for party_id, paths in parties.items():
                fed.start_supernode(party_id, node_config(paths), auth_key=paths["auth-key"])
            fed.wait_online(len(parties))
            listeners = fed.assert_loopback_only()
            print(
                f"[3/5] SuperLink (TLS, SuperNode authentication) on 127.0.0.1:{fed.port} and {count_text(len(parties), 'SuperNode')} "
                f"online ({', '.join(f'{p} = node {n}' for p, n in node_ids.items())}); listening only on "
                f"{len(listeners)} loopback ports",
                flush=True,
            )
            run_config = config_text(run_values)
            outcome.request_tag = _request_tag(str(app), run_config)
            print(f'[4/5] coordinator: edprf run {app} consortium --run-config "{run_config}"', flush=True)
            submitted = time.time()
            progress = RunProgress()
            with _coordinator_log(dep.logs) as followed, ListenerWatch(dep) as watch:
                code = run_and_follow(
                    str(app),
                    "consortium",
                    run_config,
                    env=cli_env,
                    out=followed,
                    resubmission_hint=False,
                    progress=progress,
                )  # [5/5] says how to finish a stopped run, in this command's options
            outcome.run_code, outcome.run_id = code, progress.run_id
            run_id = None if progress.run_id is None else str(progress.run_id)
            outcome.report = run_report(out, run_id, submitted)
            if code != 0 and progress.details:
                outcome.errors.append(progress.details)
            _print_summary(out, code, submitted, run_values.get("request-tag"))
            warn_refusals(outcome.report)
            print(watch.summary(), flush=True)
            if watch.exposed:
                outcome.errors.append(" ".join(watch.summary().split()))
            code = code or (1 if watch.exposed else 0)
        except KeyboardInterrupt as interrupt:
            print("\nedprf consortium: interrupted; stopping every process it started", file=sys.stderr, flush=True)
            code = exit_status(interrupt)
            outcome.errors.append("interrupted; every process it started was stopped")
        except FlowerProcessError as exc:  # one line and where to look, not a traceback
            print(f"edprf consortium: error: {_one_line(exc)} (logs in {dep.logs})", file=sys.stderr, flush=True)
            outcome.errors.append(f"{_one_line(exc)} (logs in {dep.logs})")
            code = 1
        finally:
            dep.stop()
            left = dep.leftovers()
            if left:
                print(f"edprf consortium: processes still running: {left}", file=sys.stderr)
                outcome.errors.append(f"processes still running: {left}")
                code = code or 1
            else:
                print(f"stopped: every process this command started has exited (logs in {dep.logs})", flush=True)
        # the ClientApps write the ledgers: read them only once every process has exited
        if left:
            print("budgets: not read while processes of the consortium still run (`edprf budget <ledger>` later)")
        else:
            print("budgets (from each party's ledger):")
            for line in _budget_lines(parties):
                print(line)
    return code


class _CopyToLog(io.TextIOBase):
    """What ``edprf run`` prints while following the run: on this command's output, and (without colour codes)
    appended to ``logs/coordinator.log``, so that a failed run's reasons are on disk beside the processes' logs."""

    def __init__(self, shown: io.TextIOBase, log: io.TextIOBase) -> None:
        self.shown, self.log = shown, log

    def write(self, text: str) -> int:
        from edprf_fl import without_colour

        self.log.write(without_colour(text))
        return self.shown.write(text)

    def flush(self) -> None:
        self.log.flush()
        self.shown.flush()

    def isatty(self) -> bool:  # colour on this command's output only where Flower would show it
        return self.shown.isatty()


@contextlib.contextmanager
def _coordinator_log(logs: Path):
    """This invocation's followed coordinator log, appended to ``logs/coordinator.log`` (owner-only) under a
    header line with the time."""
    from ._flower_processes import open_log

    with open_log(logs / "coordinator.log", "a", encoding="utf-8") as log:
        log.write(f"===== edprf consortium, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        yield _CopyToLog(sys.stdout, log)


def _print_summary(out: Path, code: int, submitted: float, request_tag: object = None) -> None:
    """The run's outcome from ``out``/report.json (``out``: the run config's output-dir, after --run-config),
    when this run wrote it (a refused run leaves an earlier run's report in place); a stopped run, how to
    finish it without spending again (the request-tag, deploy/README.md)."""
    from edprf_core.count_text import count_text
    from server import bounded_influence_lines

    report_path = out / "report.json"
    outcome = "completed" if code == 0 else "STOPPED" if code >= 128 else "FAILED"  # 128 + a signal: interrupted
    fresh = report_path.is_file() and report_path.stat().st_mtime >= submitted - 1
    if fresh:
        where = f"outputs in {out}"
    elif any((out / name).is_file() for name in ("report.json", "global-model.edprf")):
        where = f"it wrote nothing: {out} holds an earlier run's outputs"
    else:
        where = f"it wrote nothing ({out} {'holds no report' if out.is_dir() else 'was not created'})"
    print(f"[5/5] the run {outcome}; {where}", flush=True)
    if outcome == "STOPPED":
        tag = f"request-tag='{request_tag}'" if request_tag else "request-tag='<the run id above>'"
        print(
            "  what its parties reserved stays spent; to finish it without spending again, run this command again "
            f'with the same options and --run-config "{tag}": a party that released for that tag resends its '
            "release, no new epsilon",
            flush=True,
        )
    if fresh:
        report = json.loads(report_path.read_text(encoding="utf-8"))
        for p in sorted(report["parties"], key=lambda p: p["party_id"] or str(p["node_id"])):
            name = p["party_id"] or f"node {p['node_id']}"
            print(
                f"  {name}: {p['status']}"
                + (
                    f" ({p['reason']}) {p['message']}"
                    if p["status"] != "accepted"
                    else f", {count_text(p['n_trees'], 'tree')}, epsilon {p['epsilon']:g}"
                    + (
                        f" (resent: made and charged by run {p['resumed_from_run']}, nothing newly charged)"
                        if p.get("resumed_from_run")
                        else ""
                    )
                )
            )
        for line in bounded_influence_lines(report.get("bounded_influence", {})):
            print(f"  {line}")
        central = report.get("central_evaluation", {})
        if central.get("accuracy") is not None:
            print(f"  {_central_headline(central)}")
        if report.get("contributions"):  # each party's lines are in the run's log above: said once
            print(f"  what each party's trees add: in the run's log above, and in {report_path}")
        if report.get("failure"):
            print(f"  failure: {report['failure']}")
        if report.get("guarantee"):
            print(f"  guarantee: {report['guarantee'].splitlines()[0]}")


def _central_headline(central: dict) -> str:
    """The summary's line on the coordinator's test rows: accuracy beside balanced accuracy and the majority-class
    baseline (on bank data, always answering "no" scores 0.883, so an accuracy of 0.896 alone says little)."""
    line = f"accuracy on the coordinator's test rows: {central['accuracy']:.3f}"
    if central.get("balanced_accuracy") is not None:
        line += f", balanced accuracy {central['balanced_accuracy']:.3f}"
    if central.get("majority_class_accuracy") is not None:
        line += (
            f"; always answering their most common class {str(central.get('majority_class'))!r} scores "
            f"{central['majority_class_accuracy']:.3f}"
        )
    return line
