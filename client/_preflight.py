"""A party's set-up checked before it joins: node config, schema, policy, signing key, ledger, data file.

Shared by ``edprf party check`` (run by the hospital's IT team before the SuperNode starts) and the
ClientApp's lifespan hook (run when the SuperNode starts a ClientApp for a message), so that a
moved data file or an edited schema bound shows up in the party's own output, with the file and
the fix, instead of as a ``party_setup`` refusal at the first training request.

Privacy: everything here stays at the party.  The findings name local paths and describe the
party's own data file (rows read, kept, dropped per rule); they go to the terminal or the
party's log only, never into a reply, and nothing here changes what a reply contains (the
handlers refuse exactly as before, with their constant texts).  The ledger is opened read-only:
a check never creates it, never reserves and never spends.  The ClientApp's hook then records in an existing
ledger's ``ledger_meta`` which notes on its trails it has logged, so that each is logged at WARNING once per
ledger state (:mod:`client._noted_notes`); ``edprf party check`` shows every note and writes nothing.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import sys
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edprf_core.count_text import count_text
from edprf_core.mechanisms import load_exact_samplers
from protocol import RefusalReason, others_can_write

from ._budget_state import BudgetState, LedgerStatus, read_budget
from ._cap_record import pending_cap_change_text, recorded_cap
from ._disk_space import ledger_room_problem, read_only_text
from ._exhausted import budget_exhausted
from ._hold_estimate import MARGIN, hold_shortfall, largest_evaluation_time, seconds_text
from ._ledger import (
    CAP_CHANGES_KEY,
    CAP_KEY,
    COORDINATOR_RECORD,
    NOTED_KEY,
    PER_RECORD_SPEND,
    exact_epsilon,
    format_epsilon,
    not_dp_headline,
    not_dp_replies,
    total_spent,
)
from ._local_data import NODE_CONFIG_HINTS
from ._noted_notes import noted_before
from ._open_reservations import RESERVATION_LEFT_AFTER_SECONDS, duration_text, left_behind_and_recent, open_reservations
from ._party import PartySetup, _check_key_file
from ._policy import PartyPolicy, load_policy
from ._reply_timing import hold_problem
from ._sibling_ledgers import sibling_ledger_text, sibling_ledgers
from ._superlink_handshake import check_superlink_tls

__all__ = [
    "Finding",
    "PreflightReport",
    "check_flower_home",
    "check_pin_launcher",
    "check_python_version",
    "check_supernode_files",
    "check_trusted_apps",
    "log_preflight",
    "parse_node_config",
    "preflight",
    "preflight_configs",
]

log = logging.getLogger("edprf.party")


@dataclass(frozen=True)
class Finding:
    """One line of a check: ``level`` is ``ok``, ``note`` (worth knowing) or ``problem`` (fix before joining)."""

    level: str
    subject: str  # the file or setting the line is about
    text: str
    once_per: str = ""
    """For a note on what a ledger keeps for ever (its trails): the ledger state it describes; the ClientApp logs
    it at WARNING once per state (:mod:`client._noted_notes`).  Empty: logged at its level every time."""
    refusal: str = ""
    """For a problem that makes the party refuse new requests: the refusal code it will answer with
    (``budget_exhausted``); empty otherwise."""

    def line(self) -> str:
        return f"{self.level}: {self.subject}: {self.text}"


@dataclass
class PreflightReport:
    """Every finding of a party's check, in the order they were made."""

    findings: list[Finding] = field(default_factory=list)
    party_id: str = ""
    noted: dict[str, str] = field(default_factory=dict)
    """Per ledger read (its path), the marks of the notes on its trails the ClientApp has logged
    (:data:`client._ledger.NOTED_KEY`, read with the rest of the ledger)."""

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "problem"]

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        return [f.line() for f in self.findings]

    def _add(self, level: str, subject: Path | str, text: str, once_per: str = "", refusal: str = "") -> None:
        self.findings.append(Finding(level, str(subject), text, once_per, refusal))


_PAIR = re.compile(r"""(\S+?)=('[^']*'|"[^"]*"|\S+)""")


def parse_node_config(text: str, option: str = "--node-config") -> dict[str, Any]:
    """A SuperNode's ``--node-config`` string (or a run config), read as Flower 1.41 reads it.

    ``key=value`` pairs separated by spaces; a value is a quoted string (``'...'`` or ``"..."``)
    or a bare TOML value (``1.0``, ``true``).  Flower is not imported (it takes seconds):
    ``tests/federation/test_party_check.py`` checks this against Flower's own parser.  Text that is no
    such pair (``ledger-path = '/x'``: Flower reads no pair from it and drops it without a word) is refused,
    naming the key and the form Flower reads; whatever is accepted, Flower reads the same.  As in Flower, a
    text ending in ``.toml`` is that file's path, and dotted keys (``a.b=1``, TOML tables) are flattened.
    """
    if text.endswith(".toml"):  # flwr.common.config.parse_config_args reads the file then
        try:
            with Path(text).expanduser().open("rb") as handle:
                return _flat(tomllib.load(handle))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(
                f"{option}: a text ending in .toml is read as a TOML file's path, as Flower reads it: {text}: "
                f"{getattr(exc, 'strerror', None) or exc}"
            ) from None
    pairs, end = [], 0
    for match in _PAIR.finditer(text):
        _refuse_unread(text[end : match.start()], option)
        pairs.append(match.groups())
        end = match.end()
    _refuse_unread(text[end:], option)
    for key, value in pairs:  # one pair at a time first: the error can then name its key
        try:
            tomllib.loads(f"{key} = {value}")
        except tomllib.TOMLDecodeError:
            raise ValueError(
                f"{option}: {key}={value} cannot be parsed: a text value needs quotes ({key}='...'); a number or "
                "true/false is written bare"
            ) from None
    try:
        return _flat(tomllib.loads("\n".join(f"{key} = {value}" for key, value in pairs)))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{option}: cannot be parsed ({exc}); expected \"key='value' key='value'\"") from None


def _flat(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``, as Flower flattens a node or run config."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


_SPACED_PAIR = re.compile(r"""(\S+?)\s*=\s*('[^']*'|"[^"]*"|\S+)""")


def _refuse_unread(fragment: str, option: str) -> None:
    """Refuse text between the ``key=value`` pairs that Flower would drop (nothing but spaces may be there).

    Raises
    ------
    ValueError
        Naming the key and the pair as Flower reads it (``key='value'``, no space around ``=``) when
        ``fragment`` looks like a pair written with spaces; else naming the fragment and the expected form.
    """
    if not fragment.strip():
        return
    spaced = _SPACED_PAIR.search(fragment)
    if spaced is None:
        raise ValueError(f"{option}: expected key=value pairs separated by spaces, got {fragment.strip()!r}")
    key, value = spaced.groups()
    try:
        tomllib.loads(f"k = {value}")
    except tomllib.TOMLDecodeError:
        value = f"'{value}'"  # a text value needs quotes
    raise ValueError(
        f"{option}: {key}: expected {key}={value} (key=value, no space around '='), got {spaced.group(0)!r}, "
        "which Flower would ignore"
    )


def preflight_configs(
    node_config: Mapping[str, Any],
    run_config: Mapping[str, Any] | None = None,
    check_rows: bool = True,
    progress: Callable[[str], object] | None = None,
) -> PreflightReport:
    """Check the party that ``node_config`` (and, in simulation, ``run_config``'s ``sim-dir``) describes;
    ``progress`` as in :func:`preflight`."""
    report = PreflightReport()
    try:
        setup = PartySetup.from_configs(node_config, run_config or {})
    except ValueError as exc:
        report._add(
            "problem",
            "node config",
            f"{str(exc).removeprefix('node config: ').removeprefix('node config ')}; give --node-config "
            "\"data-path='...' schema-path='...' policy-path='...' ledger-path='...' [signing-key='...'] "
            "[data-separator=';' or 'tab'] [data-header=false]\"",
        )
        return report
    # in the ClientApp, the run config holds the coordinator's round-timeout, which the policy's hold must fit
    timeout = (run_config or {}).get("round-timeout")
    return preflight(setup, check_rows=check_rows, report=report, round_timeout=timeout, progress=progress)


def preflight(
    setup: PartySetup,
    check_rows: bool = True,
    report: PreflightReport | None = None,
    round_timeout: object = None,
    progress: Callable[[str], object] | None = None,
) -> PreflightReport:
    """Check every file of ``setup``; with ``check_rows`` also read the data file through the schema's rules; with
    the run's ``round_timeout``, whether the policy's reply hold fits it (:func:`client._reply_timing.hold_problem`).

    ``progress`` (``edprf party check``) receives a line before the data file's rows are read, the long step;
    none by default (the ClientApp's check passes none: nothing here reaches a reply or the log).

    Privacy cost: none (nothing is released; the findings are for the party itself).
    """
    report = report if report is not None else PreflightReport()
    schema = _schema(setup.schema_path, report)
    policy = _policy(setup.policy_path, schema, report)
    if policy is not None and (problem := hold_problem(policy.reply_after_seconds, round_timeout)):
        report._add("problem", setup.policy_path, problem)
    _signing_key(setup.signing_key_path, report)
    if policy is not None and setup.signing_key_path is not None:
        _key_named_for(setup.signing_key_path, policy.party_id, report)
    if policy is not None:
        _ledger(setup.ledger_path, policy, report)
    if policy is not None and check_rows:  # edprf party check only: not before every message (review rev-s64 F5)
        for sibling in sibling_ledgers(setup.ledger_path, policy.party_id, also_in=(setup.policy_path.parent,)):
            report._add("problem", setup.ledger_path, sibling_ledger_text(sibling, policy.party_id, setup.ledger_path))
    if schema is not None:
        read = _data(setup.data_path, schema, check_rows, report, setup.data_separator, setup.data_header, progress)
        if policy is not None and read is not None:
            _hold_covers_an_evaluation(setup.policy_path, policy, schema.n_classes, *read, report)
    if check_rows:  # edprf party check: the samplers a production request draws from load here too
        _exact_samplers(report)
    return report


def _exact_samplers(report: PreflightReport) -> None:
    """A problem when OpenDP's exact samplers cannot be loaded (a party then refuses every production request,
    ``party_setup``, before spending: :meth:`client.Party._refuse_without_the_samplers`)."""
    try:
        load_exact_samplers()
    except Exception as exc:  # noqa: BLE001 - OpenDP raises a bare Exception when its library cannot be mapped
        report._add(
            "problem",
            "opendp",
            f"the exact samplers cannot be loaded ({_one_line(exc)}): the party would refuse every request; is the "
            "process's memory limit too low, or opendp not installed whole (pip check)?",
        )


def _schema(path: Path, report: PreflightReport):
    from edprf_core import load_schema

    if not path.is_file():
        report._add("problem", path, "no such schema file; set schema-path to the federation's schema.toml")
        return None
    try:
        schema = load_schema(path)
    except (ValueError, OSError, KeyError, TypeError) as exc:
        report._add(
            "problem",
            path,
            f"not a valid schema ({_one_line(exc)}); take the federation's schema.toml again from the coordinator",
        )
        return None
    report._add(
        "ok",
        path,
        f"schema {schema.name!r}, {count_text(len(schema.features), 'feature')}, label "
        f"{schema.label.column!r}, fingerprint {schema.fingerprint}",
    )
    if schema.is_draft:
        report._add(
            "problem",
            path,
            f"drafted from data ({schema.draft_note}): models trained on it are NOT "
            "differentially private; replace its bounds and lists with public knowledge and say where each came "
            "from in its source",
        )
    return schema


def _policy(path: Path, schema, report: PreflightReport) -> PartyPolicy | None:
    if not path.is_file():
        report._add(
            "problem",
            path,
            "no such policy file; write one with `edprf party init-policy --schema "
            "<schema.toml> --party-id <id> --output <policy.toml>`",
        )
        return None
    try:
        policy = load_policy(path)
    except ValueError as exc:
        report._add("problem", path, f"{_one_line(exc)}; fix that key (deploy/policy.example.toml lists them all)")
        return None
    report.party_id = policy.party_id
    report._add(
        "ok",
        path,
        f"party-id {policy.party_id!r}, lifetime cap {policy.lifetime_epsilon_cap:g}, at most "
        f"{policy.max_release_epsilon:g} per release and {policy.max_evaluation_epsilon:g} per "
        f"evaluation, depth <= {policy.max_depth}, trees <= {policy.max_n_trees}, "
        f"bins <= {policy.max_n_bins}, relation {policy.relation}, "
        + ("trees and a marginals part" if policy.allow_marginals else "trees only (allow-marginals = false)")
        + (
            f", train and evaluate replies held to {policy.reply_after_seconds:g} s after the request"
            if policy.reply_after_seconds
            else ", replies at once (reply-after-seconds = 0: their time grows with the data's size)"
        ),
    )
    if schema is not None:
        if not policy.schema_fingerprint:
            report._add(
                "note",
                path,
                f"schema-fingerprint is not set, so any schema is accepted; set it to "
                f'"{schema.fingerprint}" (`edprf party init-policy` writes it)',
            )
        elif policy.schema_fingerprint != schema.fingerprint:
            report._add(
                "problem",
                path,
                f"schema-fingerprint {policy.schema_fingerprint} is not the fingerprint "
                f"of the schema file ({schema.fingerprint}); the schema was edited or is "
                "another one: take the federation's schema again, or set the policy's "
                "fingerprint to the new one if the consortium agreed to it",
            )
    if policy.min_epsilon > policy.max_release_epsilon:
        report._add(
            "problem",
            path,
            f"min-epsilon {policy.min_epsilon:g} is above max-release-epsilon "
            f"{policy.max_release_epsilon:g}: every release would be refused; lower "
            "min-epsilon or raise max-release-epsilon",
        )
    if policy.max_release_epsilon > policy.lifetime_epsilon_cap:
        report._add(
            "note",
            path,
            f"max-release-epsilon {policy.max_release_epsilon:g} is above the lifetime cap "
            f"{policy.lifetime_epsilon_cap:g}: such a release would be refused",
        )
    if 0 < policy.max_evaluation_epsilon < policy.min_epsilon:
        report._add(
            "note",
            path,
            f"max-evaluation-epsilon {policy.max_evaluation_epsilon:g} is below min-epsilon "
            f"{policy.min_epsilon:g}: every noised evaluation will be refused",
        )
    if policy.allow_seeded_randomness or policy.allow_exact_metrics:
        report._add(
            "problem",
            path,
            "allow-seeded-randomness or allow-exact-metrics is true: what the party sends "
            "is then NOT differentially private; set both to false for real data",
        )
    return policy


def _private_key_file(path: Path, fix: str, report: PreflightReport) -> bool:
    """Whether a private key's file is a regular file of mode 0600 (:func:`_check_key_file`); a problem naming
    ``fix`` (or the ``chmod`` that fixes its mode) otherwise."""
    try:
        _check_key_file(path)
    except ValueError as exc:
        text = str(exc).split(": ", 1)[-1]
        report._add("problem", path, f"{text}; {f'chmod 600 {path}' if 'chmod' in text else fix}")
        return False
    return True


def _signing_key(path: Path | None, report: PreflightReport) -> None:
    if path is None:
        report._add(
            "note",
            "node config",
            "no signing-key: releases go out unsigned, and a coordinator with a "
            "keys-dir rejects them; add signing-key='<id>.signing.pem' "
            "(`edprf certs party` makes it)",
        )
        return
    if not _private_key_file(path, "check signing-key in the node config", report):
        return
    try:
        from protocol import load_private_key

        load_private_key(path)
    except (ValueError, TypeError, OSError) as exc:  # any parse failure of the key is the same finding
        report._add(
            "problem",
            path,
            f"not a release-signing key ({type(exc).__name__}); make one with `edprf certs party --only signing`",
        )
        return
    report._add("ok", path, "signing key readable, mode 0600")


def _ledger(path: Path, policy: PartyPolicy, report: PreflightReport) -> None:
    state = read_budget(path, policy.lifetime_epsilon_cap, party_id=policy.party_id)
    if state.anchor_error:
        report._add("problem", state.anchor_path, state.anchor_error)
        return
    if state.ledger_of_another or state.too_large or state.disk_full or state.busy:  # its text says what to do
        report._add("problem", path, state.ledger_error)
        return
    if state.status is LedgerStatus.UNREADABLE:
        report._add(
            "problem",
            path,
            f"{state.ledger_error}; restore the party's ledger from its backup (never "
            "replace it with an empty one: it is the record of spent epsilon)",
        )
        return
    # a ledger this check calls a problem gets no ok line (review rev-auto A3: `ok: ... remaining 0` and `problem:
    # ... remaining epsilon 0 is below min-epsilon` were both printed for one ledger); its figures go in the problem
    exhausted = budget_exhausted(state.remaining, exact_epsilon(policy.min_epsilon))  # as `edprf budget` decides it
    if state.ledger_absent:
        _no_ledger_yet(state, report, exhausted)
    else:
        _ledger_read(state, report, exhausted)
    _anchor_mode(state, report)
    if exhausted:
        held = "no ledger yet" if state.ledger_absent else count_text(len(state.entries), "entry", "entries")
        report._add(
            "problem",
            path,
            f"remaining epsilon {format_epsilon(state.remaining)} is below min-epsilon "
            f"{policy.min_epsilon:g}: every new request will be refused (budget_exhausted; a repeated request "
            "id it already released is resent, spending nothing); the lifetime cap is reached for this data "
            f"({held}, spent {format_epsilon(state.spent)} of the lifetime cap {format_epsilon(state.cap)})",
            refusal=RefusalReason.BUDGET_EXHAUSTED.value,
        )


def _anchor_mode(state: BudgetState, report: PreflightReport) -> None:
    """An anchor readable by others: it holds the held-out salt (from 0.2.2), as secret as the ledger."""
    if state.anchor is None or state.anchor.salt is None:
        return
    mode = state.anchor_path.stat().st_mode & 0o777
    if mode & 0o077:
        report._add(
            "note",
            state.anchor_path,
            f"the ledger's anchor is readable by others (mode {mode:o}): it holds the hold-out split's secret "
            f"salt; chmod 600 {state.anchor_path.name}",
        )


def _no_ledger_yet(state: BudgetState, report: PreflightReport, exhausted: bool = False) -> None:
    """A ledger path with nothing at it: what its anchor records (a lost ledger), and whether it can be created (no
    ok line when ``exhausted``: the caller says the budget is a problem)."""
    path = state.ledger_path
    if state.status is LedgerStatus.LOST:
        report._add(
            "note",
            path,
            f"no ledger, but its anchor {state.anchor_path.name} records {format_epsilon(state.anchor.spent)} spent: "
            "the ledger was lost or moved; restore it, or the new ledger will count that as spent"
            + (" and take back its held-out salt (the same held-out rows)" if state.anchor.salt else ""),
        )
    parent = path.parent if path.parent != Path("") else Path(".")
    writable = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    if parent.exists() and not writable:
        report._add(
            "problem",
            path,
            f"no ledger yet and {parent} is not writable by this user; make it "
            "writable (the ledger is created on the first request)",
        )
    elif not exhausted:
        report._add(
            "ok",
            path,
            f"no ledger yet: it is created on the first request; {format_epsilon(state.remaining)} epsilon available",
        )


def _ledger_read(state: BudgetState, report: PreflightReport, exhausted: bool = False) -> None:
    """A ledger that was read: its file's access, its disk's free space, what its anchor adds, its trails, and what
    is spent and left (no ok line when ``exhausted``: the caller says the budget is a problem)."""
    path = state.ledger_path
    if not os.access(path, os.R_OK | os.W_OK):
        fix = read_only_text(path) or "the ledger is not writable by this user; fix its owner or mode"
        report._add("problem", path, fix)
    elif room := ledger_room_problem(path):  # the party refuses every request so (reviews rev-ops F8, rev-ops2 N5)
        report._add("problem", path, f"{room}: the party refuses every request until then")
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        report._add(
            "note",
            path,
            f"the ledger is readable by others (mode {mode:o}): it holds the hold-out "
            f"split's secret salt; chmod 600 {path.name}*",
        )
    if state.status is LedgerStatus.BEHIND_ANCHOR:
        report._add(
            "note",
            path,
            f"the ledger holds {format_epsilon(state.in_ledger)} spent and its anchor {state.anchor_path.name} "
            f"records more (restored from a backup, or replaced?): the party counts {format_epsilon(state.carried)} "
            "more as spent before its next request",
        )
    if state.anchor_missing:
        report._add("note", path, state.anchor_missing_text())
    report.noted[str(path)] = state.meta.get(NOTED_KEY, "")
    entries = state.entries
    from_record = [e for e in entries if e.request_id.startswith("carried-") and COORDINATOR_RECORD in e.detail]
    if from_record:
        report._add(
            "note",
            path,
            f"{format_epsilon(total_spent(from_record))} of the spent epsilon was carried from {COORDINATOR_RECORD} "
            f"({count_text(len(from_record), 'time')}): the ledger held less than the coordinator recorded for this party "
            "(the host or the ledger restored from an earlier state?); the details are in the ledger's entries",
            once_per=" ".join(sorted(e.request_id for e in from_record)),
        )
    n_not_dp, not_dp_lines = not_dp_replies(state.meta)
    if n_not_dp:
        report._add(
            "note",
            path,
            f"{not_dp_headline(n_not_dp)}; the latest: {not_dp_lines[-1] if not_dp_lines else '-'}; "
            "`edprf budget` lists them",
            once_per=str(n_not_dp),
        )
    if pending := pending_cap_change_text(recorded_cap(state.meta.get(CAP_KEY)), state.cap):
        report._add("note", path, pending)  # a policy edited since the party last opened its ledger (review rev-dpo D9)
    changes = state.meta.get(CAP_CHANGES_KEY)
    if changes:
        report._add(
            "note",
            path,
            f"the lifetime cap was changed (UTC): {'; '.join(changes.splitlines())} (each time is the party's first "
            "opening of its ledger under the new cap, not the policy's edit)",
            once_per=changes,
        )
    totals = f"{count_text(len(entries), 'entry', 'entries')}, spent {format_epsilon(state.spent)}"
    if over := state.over_cap_text():  # carried past the cap, or a cap lowered after spending (review rev-dpo D1)
        report._add(
            "problem", path, f"{totals} of the lifetime cap {format_epsilon(state.cap)}: {over} ({PER_RECORD_SPEND})"
        )
    elif not exhausted:
        report._add(
            "ok",
            path,
            f"{totals}, remaining {format_epsilon(state.remaining)} of the lifetime cap {format_epsilon(state.cap)} "
            f"({PER_RECORD_SPEND})",
        )
    _open_reservations(path, state, report)


def _open_reservations(path: Path, state: BudgetState, report: PreflightReport) -> None:
    """Notes on the ledger's ``reserved`` entries: those older than :data:`client._open_reservations.RESERVATION_LEFT_AFTER_SECONDS`
    were left by a crash or a failed write (review rev-ops F6: all were called a crash), the younger ones may be
    requests still running.  The texts hold no age, so that the ClientApp logs each note once per ledger state
    (:mod:`client._noted_notes`); ``edprf budget`` shows the ages."""
    found = open_reservations(state.entries)
    unknown = sorted(r.entry.request_id for r in found if r.age is None)  # stamped in the future: a clock moved
    old, recent = map(sorted, left_behind_and_recent(r for r in found if r.age is not None))
    hour = duration_text(RESERVATION_LEFT_AFTER_SECONDS)
    if unknown:  # review rev-dpo D10: these were called "reserved less than 1 h ago" for as long as the clock lagged
        report._add(
            "note",
            path,
            f"{count_text(len(unknown), 'request')} reserved at a future or unreadable time and not completed: age "
            "unknown (the party's clock was moved); left by a crash or a failed write unless a request is running "
            "now; their epsilon stays spent",
            once_per=" ".join(unknown),
        )
    if old:
        report._add(
            "note",
            path,
            f"{count_text(len(old), 'request')} reserved more than {hour} ago and not completed: left by a crash or "
            "a failed write (no request holds its reservation that long; the party's log of that time says which); "
            "their epsilon stays spent",
            once_per=" ".join(old),
        )
    if recent:
        report._add(
            "note",
            path,
            f"{count_text(len(recent), 'request')} reserved less than {hour} ago and not completed: running now, or "
            "stopped by a crash or a failed write (`edprf budget` shows how long ago); their epsilon stays spent",
            once_per=" ".join(recent),
        )


def _data(
    path: Path,
    schema,
    check_rows: bool,
    report: PreflightReport,
    sep: str = ",",
    header: bool = True,
    progress: Callable[[str], object] | None = None,
) -> tuple[int, float] | None:
    """The data file: with ``check_rows`` every row through the schema's rules, else its first line only.

    ``sep`` and ``header`` are the node config's ``data-separator`` and ``data-header``.  Returns the rows kept and
    the read's seconds when every row was read, else None.
    """
    from edprf_core import DataValidationError, check_data

    if not path.is_file():
        report._add("problem", path, "no such data file; set data-path to the party's CSV (columns as in the schema)")
        return
    if not check_rows:  # the ClientApp's check: the header line at most, never a record
        if header:
            _header(path, schema, report, sep)
        else:  # the first line of a file without a header is a record: its length would time every reply
            report._add("ok", path, "present, no header line (data-header=false; rows not read here)")
        return
    if not header:
        _headerless(path, schema, report, sep)
    _read_memory(path, report)  # before the read itself, which may be what runs out of memory
    if progress is not None:
        progress(f"reading {path} through the schema's rules ...")
    started = time.monotonic()
    try:
        result = check_data(path, schema, sep=sep, header=header, hints=NODE_CONFIG_HINTS, progress=progress)
    except (DataValidationError, ValueError, OSError) as exc:
        report._add("problem", path, f"{_one_line(exc)}; {_columns_rule(schema, header)}")
        return None
    read_seconds = time.monotonic() - started
    for line in result.lines():  # lines and rows the rules leave out are worth a look: notes, not problems
        report._add("note" if line.startswith(("lines left out", "rows dropped")) else "ok", path, line)
    for level, text in result.findings():  # a file not in UTF-8, a numeric column mostly unread: problems
        report._add(level, path, text)
    if result.rows_kept == 0:
        report._add(
            "problem",
            path,
            "no row satisfies the schema's rules: check the separator, the header (data-header), the "
            "units and the class names (`edprf schema check` shows the same counts)",
        )
    return result.rows_kept, read_seconds


def _hold_covers_an_evaluation(
    path: Path, policy: PartyPolicy, n_classes: int, rows_kept: int, read_seconds: float, report: PreflightReport
) -> None:
    """With a reply hold set: a problem when it is shorter than an evaluation of the largest model the policy admits
    on these rows (:mod:`client._hold_estimate`), else what the estimate is."""
    if policy.reply_after_seconds <= 0:
        return
    estimate = largest_evaluation_time(policy, n_classes, rows_kept, read_seconds)
    if problem := hold_shortfall(policy, estimate):
        report._add("problem", path, problem)
        return
    report._add(
        "ok",
        path,
        f"reply-after-seconds = {policy.reply_after_seconds:g} covers an evaluation of the largest model this policy "
        f"admits on about {estimate.held_out_rows:,} held-out rows ({MARGIN:g} times about "
        f"{seconds_text(estimate.seconds)} here, estimated)",
    )


READ_MEMORY_PER_FILE_BYTE = 3.5
"""Peak memory of a party's read and fit (``load_local_data``, then ``EDPRFClassifier.fit`` with ε 1) per byte of
its CSV, rounded up from measurements (``/usr/bin/time -f "%e s, %M KB"``) on a 1.93 GB file of 10^7 rows and 30
columns, amounts with many distinct values: 4.89 GB (2.5 times; the read alone 4.90 GB) and 1.40 GB on its
first 2*10^6 rows (3.6 times, where the interpreter's own 0.12 GB weighs more).  (The read alone took 11.7 GB
before it held the file once, as Arrow text with 4-byte offsets let go column by column; the fit 2.46 GB on the
2*10^6 rows before it counted the marginals one feature at a time.)

Kept after the read numbered each block as it read it (the file's text is never held whole) and the builder held
its cells once (``Party.train``, default request): 304 MB of 10^6 rows x 51 columns 0.95 GB (3.1 times), 925 MB
of 5*10^6 x 31 2.26 GB (2.4 times), 2.0 GB of 6.6*10^6 x 51 4.17 GB (2.1 times): values that repeat (categories,
rounded measurements) are held once each.  A file whose cells are nearly all distinct keeps them all as text:
2*10^6 rows x 30 amounts to the cent (597 MB) peaked at 4.95 GB (8.3 times, the same before), while the schema's
rules read every column's distinct texts at once (``conforming_rows``)."""


def _available_memory() -> int | None:
    """Bytes of memory this machine has available (Linux ``MemAvailable``), or None where that is not known."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read_memory(path: Path, report: PreflightReport, available: int | None = None) -> None:
    """A finding when reading the data file would need half the available memory or more (a problem past all of
    it: the ClientApp would be killed while reading, before training).  Local, for the party's operator: the
    ClientApp's own check (rows not read) does not make it."""
    available = _available_memory() if available is None else available
    if available is None:
        return
    size = path.stat().st_size
    need = size * READ_MEMORY_PER_FILE_BYTE
    if need < available / 2:
        return
    gib = 2.0**30
    said = (
        f"reading and training on this {size / gib:.1f} GiB file takes about {need / gib:.0f} GiB of memory ({READ_MEMORY_PER_FILE_BYTE:g} "
        f"times its size) and this machine has {available / gib:.0f} GiB available"
    )
    if need > available:
        report._add(
            "problem",
            path,
            f"{said}: the party would run out of memory reading it or training on it; serve it from a machine with "
            "more memory, or split the data among parties",
        )
    else:
        report._add("note", path, f"{said}: little is left for anything else on this machine while it trains")


def _columns_rule(schema, header: bool) -> str:
    """How the data file must lay out the schema's columns, with or without a header line."""
    shown = f"{', '.join([f.name for f in schema.features][:6])}, ..., {schema.label.column}"
    if header:
        return f"the header must name the schema's columns ({shown})"
    return (
        "without a header (data-header=false) the columns must be the schema's features in order, then the label "
        f"({shown})"
    )


def _first_line(path: Path) -> str | None:
    """The data file's first non-blank line among its first 100 (at most 1 MiB of it), without its line break."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        first = next((line for line in (handle.readline(1 << 20) for _ in range(100)) if line.strip()), None)
    return first.rstrip("\r\n") if first else None


def _header(path: Path, schema, report: PreflightReport, sep: str = ",") -> None:
    """The header line only (its cost does not depend on the rows): the ClientApp's check."""
    from edprf_core import DataValidationError
    from edprf_core.tables import header_names

    if path.suffix.lower() not in (".csv", ".txt", ".tsv"):
        report._add("ok", path, "present (rows and header not checked here: `edprf party check` reads them)")
        return
    try:
        header_names(schema, _first_line(path), sep, True, path, NODE_CONFIG_HINTS)
    except (DataValidationError, ValueError, OSError) as exc:
        report._add("problem", path, f"{_one_line(exc)}; the header must name the schema's columns")
        return
    report._add("ok", path, "header names the schema's columns (rows not read here: `edprf party check` reads them)")


def _headerless(path: Path, schema, report: PreflightReport, sep: str = ",") -> None:
    """With ``data-header=false``: a note when the first line names the schema's columns after all (it would be
    read as a record, and most likely left out), else what the columns are taken to be.

    Reads the first non-blank line, a record in such a file: only ``edprf party check`` runs it, never the
    ClientApp's check, whose time, outside the reply hold, would then depend on that record's length (black-box
    review, stop 57: 0.65 ms against 1.66 ms for a 1 MiB first record); the finding stays in the party's own output.
    """
    if path.suffix.lower() in (".parquet", ".pq"):  # edprf_core.tables.read_table reads these as Parquet
        report._add("note", path, "data-header=false does not apply to Parquet: its columns are named in the file")
        return
    try:
        first = _first_line(path)
    except OSError as exc:
        report._add("problem", path, f"cannot read the data file ({exc.strerror or type(exc).__name__})")
        return
    cells = {c.strip().strip('"') for c in first.split(sep)} if first else set()
    if schema.label.column in cells and cells & set(schema.feature_names):
        report._add(
            "note",
            path,
            "data-header=false, but the first line names the schema's columns: it is read as a record (and most "
            "likely left out); remove data-header=false from the node config if it is a header",
        )
        return
    report._add(
        "ok", path, "no header line (data-header=false): columns are the schema's features in order, then the label"
    )


_SIGNING_SUFFIX = ".signing.pem"


def _key_named_for(path: Path, party_id: str, report: PreflightReport) -> None:
    """A problem when the signing key's file is named for another party (`edprf certs party` names it
    ``<party-id>.signing.pem``): a typo in party-id, or another party's key, that the coordinator would reject."""
    named_for = Path(path).name.removesuffix(_SIGNING_SUFFIX)
    if named_for != Path(path).name and named_for != party_id:
        report._add(
            "problem",
            path,
            f"the signing key is named for {named_for!r} but the policy's party-id is "
            f"{party_id!r}: a coordinator with that party's public key would reject the releases; fix party-id "
            "or signing-key",
        )


def check_supernode_files(
    auth_key: Path | None,
    root_certificates: Path | None,
    report: PreflightReport,
    superlink: str | None = None,
) -> PreflightReport:
    """The SuperNode's own TLS and authentication files, as ``flower-supernode`` reads them.

    A wrong ``--auth-supernode-private-key`` path ends the SuperNode with a traceback; a key given as
    ``--root-certificates`` makes it fail its handshake and hang.  Checked here before it starts.  With
    ``superlink`` (the SuperNode's ``--superlink`` address) and readable root certificates, one TLS handshake
    to it checks that they verify the certificate it presents
    (:func:`client._superlink_handshake.check_superlink_tls`; nothing is sent).
    """
    if auth_key is not None:
        _auth_key(Path(auth_key), report)
    if root_certificates is not None:
        before = len(report.problems)
        _root_certificates(Path(root_certificates), report)
        if superlink is not None and len(report.problems) == before:
            check_superlink_tls(superlink, Path(root_certificates), report)
    return report


_TRUSTED_HASH = re.compile(r"[0-9a-f]{64}")


VERIFIED_PYTHON = (3, 11)
"""The Python version the project is tested and released on (pyproject's ``requires-python`` admits later ones)."""


def check_python_version(report: PreflightReport, version: tuple[int, int] | None = None) -> PreflightReport:
    """A note when this Python is not :data:`VERIFIED_PYTHON` (review rev-pkg P9: 3.13 installed and ran without a
    word): the party's ClientApp runs under the SuperExec's Python, which the runbook makes this venv's.
    ``version``: ``sys.version_info[:2]`` when None.  Privacy cost: none."""
    major, minor = version or sys.version_info[:2]
    if (major, minor) != VERIFIED_PYTHON:
        report._add(
            "note",
            f"Python {major}.{minor}",
            f"edprf-fl is tested and released on Python {VERIFIED_PYTHON[0]}.{VERIFIED_PYTHON[1]} (its pins, "
            "constraints.txt and deploy/requirements.lock, are for it); another version installs, but its "
            "dependencies' behaviour on it is not verified here",
        )
    return report


def check_pin_launcher(report: PreflightReport, this_version: str) -> PreflightReport:
    """A note when the ``flwr-clientapp`` first on this process's ``PATH`` is an app-pin launcher of another
    edprf-fl version (review rev-upgrade U3): a launcher older than 0.2.13 still enforces its list but does not mark
    the ClientApp's process, whose app then warns at every message that the party runs unpinned; an upgrade
    reinstalls it (deploy/README.md section 11, How to upgrade, step 2).

    ``this_version``: the launcher this version installs, from its second line on (its first names the
    interpreter).  Best effort: the service that starts the ClientApps may have another ``PATH`` than the shell
    running the check; nothing when no ``flwr-clientapp`` is found, when it is not a launcher (Flower's own
    program) or cannot be read.  Privacy cost: none (nothing is released; the finding is for the party itself).
    """
    import shutil

    found = shutil.which("flwr-clientapp")
    if found is None:
        return report
    try:
        text = Path(found).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return report
    if _PIN_LIST_VARIABLE not in text or text.split("\n", 1)[-1] == this_version:
        return report
    report._add(
        "note",
        "app pin",
        f"{found}, the flwr-clientapp first on this PATH, is an app-pin launcher of another edprf-fl version (one "
        "before 0.2.14 trusts a list other accounts can write; one before 0.2.13 does not mark the ClientApp's "
        "process, so the app warns that the party runs unpinned); reinstall it from this version, "
        "`edprf party install-pin "
        f"{Path(found).parent} --force` (deploy/README.md section 11, How to upgrade, step 2)",
    )
    return report


_PIN_LIST_VARIABLE = "EDPRF_TRUSTED_APP_HASHES"
"""The variable every version of the app-pin launcher reads its list from: what tells a launcher from Flower's own
``flwr-clientapp``."""


def check_trusted_apps(path: Path | None, report: PreflightReport) -> PreflightReport:
    """The app pin's list of approved bundles (``EDPRF_TRUSTED_APP_HASHES``, deploy/README.md section 6), read as
    the pin's launcher (``edprf_fl/_pinned_clientapp.py``) reads it: one hex SHA-256 per line, ``#`` starting a
    comment (the label).

    A problem when the launcher would refuse every bundle (an unreadable file, a line that is not a hash, no hash);
    with one approved bundle an ``ok`` naming it; with more than one a ``note`` listing each with its label: while
    an older bundle stays approved the coordinator can submit it and bypass the newer version's safeguards, so it is
    removed once every party and the coordinator run the newer one (section 11, How to upgrade, step 5; review
    rev-day2 U2).  ``path`` None (no list given): a ``note`` that the pin was not checked (review rev-pkg P2: an
    unpinned party's check said "no problem found" and nothing else).  A problem as well when accounts other than
    the list's owner can write it, or replace it in its directory (:func:`_others_can_write_the_list`).  Privacy
    cost: none (nothing is released; the findings are for the party itself).
    """
    if path is None:
        report._add(
            "note",
            "app pin",
            "not checked (no --trusted-apps, no EDPRF_TRUSTED_APP_HASHES): without the pin the SuperNode runs every "
            "app bundle the coordinator submits, next to the data; install it before serving real data "
            "(`edprf party install-pin DIR`, deploy/README.md section 6) and give its list here",
        )
        return report
    subject = f"trusted apps {path}"
    _others_can_write_the_list(Path(path), subject, report)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        report._add("problem", subject, f"cannot be read ({type(exc).__name__}): the app pin would refuse every bundle")
        return report
    approved: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        entry, _, label = line.partition("#")
        entry = entry.strip().lower()
        if not entry:
            continue
        if not _TRUSTED_HASH.fullmatch(entry):
            report._add(
                "problem",
                subject,
                f"line {number} is not a hex SHA-256 (64 characters) before its '#': the app pin would refuse every "
                "bundle",
            )
            return report
        approved.setdefault(entry, " ".join(label.split())[:120])
    if not approved:
        report._add("problem", subject, "lists no bundle hash: the app pin would refuse every bundle (section 6)")
        return report
    shown = "; ".join(
        f"{digest[:16]}... {f'# {label}' if label else '(no label)'}" for digest, label in approved.items()
    )
    if len(approved) == 1:
        report._add("ok", subject, f"1 approved bundle: {shown}")
        return report
    report._add(
        "note",
        subject,
        f"{len(approved)} approved bundles: {shown}. While an older one stays listed the coordinator can submit it, "
        "and its runs bypass the newer version's safeguards (such as the ledger's delivery rows and the resend "
        "guard): once every party and the coordinator run the newest, remove the others (deploy/README.md "
        "section 11, How to upgrade, step 5)",
    )
    return report


def _others_can_write_the_list(path: Path, subject: str, report: PreflightReport) -> None:
    """A problem when the list of approved bundles (links followed) is writable by accounts other than its owner, or
    a directory above it, as named or with links resolved, is writable by them without the sticky bit (group or
    other write bit, read from the stat bits: the check may run as root): anyone who can write the list, or rename a
    directory above it away and put their own in its place, approves any bundle (reviews rev-pkg2 R7, read67), so
    the launcher (``edprf_fl/_pinned_clientapp.py``, the same rule) approves nothing from such a list: the party
    refuses every run until it is fixed.  Nothing when the file cannot be read (its own problem)."""
    listed = path.absolute()
    try:
        resolved = Path(os.path.realpath(listed))
        checked = [("the list", resolved, resolved.stat())]
        checked += [
            (f"the directory {where} above it", where, where.stat())
            for where in dict.fromkeys([*listed.parents, *resolved.parents])
        ]
    except OSError:
        return
    for what, where, held in checked:
        mode = stat.S_IMODE(held.st_mode)
        if not others_can_write(held.st_mode, sticky_protects=where != resolved):
            continue
        report._add(
            "problem",
            subject,
            f"{what} (mode {mode:04o}, owner {_account_name(held.st_uid)}) is writable by other accounts: any of them "
            f"could approve any app bundle, which the SuperNode would then run next to the data, so the app pin "
            f"(0.2.14 on) approves nothing from it (this party refuses every run); chmod go-w {where}, so that only its "
            "owner writes it (deploy/README.md section 6)",
        )
        return


def check_flower_home(report: PreflightReport, pinned: bool = False) -> PreflightReport:
    """Whether Flower can install app bundles under ``$FLWR_HOME`` (default ``~/.flwr``) as this account, and only
    this account.

    Flower unpacks each run's app bundle under ``$FLWR_HOME/apps`` in the ClientApp's process; a service account
    without a writable home (``HOME=/nonexistent``) gets a SuperNode that comes online and then fails every message
    at the bundle's unpacking, the readiness query's included (which the readiness round counts as serving: a failed
    ClientApp is not a refusal), so every training request fails (``PermissionError``, the coordinator's
    ``client_error``; review rev-pkg P5).  A problem when the directory (or ``apps`` in it) cannot be written, or
    cannot be created (the nearest existing parent is not a writable directory).

    Flower also reuses an unpacked ``$FLWR_HOME/apps/<app>`` without checking it again, so another account that can
    write there puts code next to the data, which the party then runs (review rev-pkg2 R2).  A problem too when the
    directory or its ``apps`` is not owned by this account or is group- or other-writable (stat bits, not
    ``os.access``: the check may run as root), or, when it is missing, when its nearest existing parent is writable
    by other accounts (any of them can create it first; a sticky bit does not stop that).

    ``pinned`` (a list of approved bundles is given, review rev-pkg2 R3): the pin's launcher
    (``edprf_fl/_pinned_clientapp.py``, ``install``) unpacks each approved bundle into a fresh private directory
    (``tempfile.mkdtemp``) and answers Flower's ``get_project_dir`` with it, so nothing of ``$FLWR_HOME/apps`` is
    read or written; every finding that would be a problem is then a ``note`` (needed if the pin is removed).
    Nothing is created.  It reads this process's environment, which the runbook makes the service's (the check runs
    as the service account).  Privacy cost: none (nothing is released; the findings are for the party itself).
    """
    given = os.environ.get("FLWR_HOME")
    origin = "FLWR_HOME" if given else "FLWR_HOME unset: ~/.flwr"
    level = "note" if pinned else "problem"
    fix, shared_fix = _flower_home_fix(_FLOWER_HOME_FIX, pinned), _flower_home_fix(_FLOWER_HOME_SHARED_FIX, pinned)
    try:
        home = Path(given).absolute() if given else Path.home() / ".flwr"
    except RuntimeError as exc:  # no HOME and no password entry
        report._add(level, "Flower home", f"~/.flwr cannot be found ({exc}){fix}")
        return report
    uid = os.geteuid()
    name = _account_name(uid)
    account = name if name == f"uid {uid}" else f"{name} (uid {uid})"
    subject = f"Flower home {home} ({origin})"
    writable = os.W_OK | os.X_OK
    existing = home
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if existing != home:
        if not existing.is_dir() or not os.access(existing, writable):
            why = "is not a directory" if not existing.is_dir() else "is not writable by this account"
            text = f"cannot be created by {account}: {existing} {why}{fix}"
            report._add(level, subject, text)
            return report
        parent = existing.stat()
        if others_can_write(parent.st_mode):
            report._add(
                level,
                subject,
                f"does not exist, and {existing} (mode {stat.S_IMODE(parent.st_mode):04o}, owner "
                f"{_account_name(parent.st_uid)}) is writable by other accounts: any of them could create it "
                f"first, with code of its own in apps/ (the sticky bit does not stop a new name){shared_fix}",
            )
            return report
        report._add("ok", subject, f"{account} can create it (Flower does at the first run)")
        return report
    apps = home / "apps"
    for directory in (home, apps) if os.path.lexists(apps) else (home,):
        if not directory.is_dir():
            report._add(level, subject, f"{directory} is not a directory{fix}")
            return report
        if not os.access(directory, writable):
            report._add(level, subject, f"{directory} is not writable by {account}{fix}")
            return report
        held = directory.stat()
        mode = stat.S_IMODE(held.st_mode)
        shared = others_can_write(mode)
        if held.st_uid != uid or shared:
            why = " and ".join(
                ([f"is not owned by {account}"] if held.st_uid != uid else [])
                + (["is writable by other accounts"] if shared else [])
            )
            report._add(
                level,
                subject,
                f"{directory} (mode {mode:04o}, owner {_account_name(held.st_uid)}) {why}: Flower reuses an "
                f"unpacked bundle under apps/ without checking it again, so code another account puts there runs "
                f"next to the data{shared_fix}",
            )
            return report
    report._add("ok", subject, f"writable by {account}, its owner, and by no other account")
    return report


def _account_name(uid: int) -> str:
    """The account name of ``uid`` (``uid N`` when it has no password entry)."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


_FLOWER_HOME_FIX = (
    "Flower unpacks each run's app bundle under $FLWR_HOME/apps, so every training request would fail "
    "(PermissionError, client_error at the coordinator). Set FLWR_HOME in the environment of the SuperNode and of "
    "its SuperExec to a directory the party's service account owns (e.g. $PARTY/flwr, mode 0700: deploy/README.md "
    "section 3), and run this check as that account with the same environment"
)

_FLOWER_HOME_SHARED_FIX = (
    "give FLWR_HOME (in the environment of the SuperNode and of its SuperExec) a directory of the party's service "
    "account's own, mode 0700 (chmod 700, in a parent only it or root can write; deploy/README.md sections 2 and 3), "
    "delete its apps/ if other accounts could ever write there (Flower unpacks each bundle again), and run this check "
    "as that account with the same environment"
)


def _flower_home_fix(fix: str, pinned: bool) -> str:
    """The end of a Flower-home finding: ``; fix`` (unpinned), or why it does not matter while the pin runs and
    ``fix`` for when it is removed."""
    if not pinned:
        return f"; {fix}"
    return (
        ". Not used while the app pin runs (its launcher, edprf_fl/_pinned_clientapp.py, unpacks each approved bundle "
        f"into a private temporary directory); needed if the pin is removed: {fix}"
    )


def _auth_key(path: Path, report: PreflightReport) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    if not _private_key_file(path, "check --auth-supernode-private-key", report):
        return
    try:
        key = load_ssh_private_key(path.read_bytes(), None)
    except (ValueError, TypeError, OSError):  # Flower reads it the same way and exits on any failure
        key = None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        report._add(
            "problem",
            path,
            "not a SuperNode authentication key (an OpenSSH EC private key without passphrase, "
            "<id>.auth.key from `edprf certs party`)",
        )
        return
    report._add("ok", path, "SuperNode authentication key readable (OpenSSH EC), mode 0600")


def _root_certificates(path: Path, report: PreflightReport) -> None:
    import datetime as dt

    from cryptography import x509

    try:
        data = path.read_bytes()
    except OSError as exc:
        report._add("problem", path, f"cannot read the root certificates ({exc.strerror or type(exc).__name__})")
        return
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        held = "a private key" if b"PRIVATE KEY" in data else "no PEM certificate"
        report._add("problem", path, f"holds {held}: give --root-certificates the consortium's CA certificate (ca.crt)")
        return
    now = dt.datetime.now(dt.UTC)
    expired = [c for c in certificates if c.not_valid_after_utc < now]
    if expired:
        report._add("problem", path, f"the certificate expired on {expired[0].not_valid_after_utc:%Y-%m-%d}")
        return
    report._add("ok", path, f"root certificates readable ({count_text(len(certificates), 'certificate')}, not expired)")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def log_preflight(
    node_config: Mapping[str, Any], run_config: Mapping[str, Any], logger: logging.Logger | None = None
) -> PreflightReport:
    """Run the checks and write them to the party's log: problems as errors, notes as warnings (a note on a
    ledger's trail at WARNING once per ledger state, at DEBUG after: :mod:`client._noted_notes`), the rest at
    DEBUG, and one summary line.

    Used by the ClientApp's lifespan hook; never raises (the handlers refuse on their own).  The
    data file's rows are NOT read here, only its header: the hook runs before every reply, and a
    scan of the rows would make the latency of every reply, refusals included, depend on the data
    (a free, repeatable timing channel: a coordinator could send requests the policy refuses and
    time them).  ``edprf party check`` reads the rows, locally, when the party's staff run it.
    """
    logger = logger or log
    try:
        report = preflight_configs(node_config, run_config, check_rows=False)
    except Exception:  # a bug here must not stop the party from answering (it refuses on its own)
        logger.exception("party check failed to run")
        return PreflightReport()
    who = report.party_id or "this party"
    levels = {"problem": logging.ERROR, "note": logging.WARNING, "ok": logging.DEBUG}
    try:  # a ledger's trail: at WARNING once per state, then at DEBUG
        logged_before = noted_before(report.findings, report.noted)
    except Exception:  # a bug here must not stop the party from answering: every note at its level, as before
        logger.debug("party check: the notes logged before could not be read", exc_info=True)
        logged_before = set()
    for i, finding in enumerate(report.findings):
        logger.log(logging.DEBUG if i in logged_before else levels[finding.level], "party check: %s", finding.line())
    if report.ok:
        logger.info("party check of %s: no problem found", who)
    else:
        logger.error(
            "party check of %s: %s above; fix them and run `edprf party check --node-config ...` to confirm",
            who,
            count_text(len(report.problems), "problem"),
        )
    return report
