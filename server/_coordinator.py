"""The coordinator's federation: request releases, validate, merge, save, evaluate.

Privacy: the coordinator sees only DP releases and noised metrics (exact
metrics only where a party's policy and the run allow them, and the guarantee
then says NOT DP).  Merging and evaluating on its own central test data are
post-processing.  The global forest is ε-DP per record with ε the largest
party total of release and evaluation ε (``server._guarantee``), provided each
person's records sit at one party (see ``edprf_core.forest.FEDERATION_NOTE``).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import asdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from edprf_core import Schema, merge_forests
from edprf_core.count_text import count_text
from edprf_core.encoding import encode_labels
from edprf_core.forest import BOUNDED_INFLUENCE_PARTS, bounded_influence_parts, influence_cuts, tolerated_among
from protocol import (
    OWNER_ONLY_FILE,
    ROW_COUNTS_KEY,
    InvalidRelease,
    PartyKeyRegistry,
    Reason,
    RefusalReason,
    ReleasePolicy,
    ReplyStatus,
    bound_to_run,
    build_global_model,
    decode_release,
    load_global_model,
    make_owner_only_dirs,
    registration_text,
    request_release_bytes,
    save_atomic,
    signed_charge,
    spend_record_text,
)
from protocol.messages import (
    METRICS_KEY,
    MODEL_KEY,
    REQUEST_KEY,
    RESULT_KEY,
    EvaluateRequest,
    TrainRequest,
    train_request_id,
)

from ._config import CoordinatorConfig
from ._conformance import count_content_digest, request_mismatch
from ._connected_parties import ConnectedParties, connected_parties, supernode_key_owners
from ._contribution import part_votes, party_contributions
from ._evaluation import evaluation_plan, evaluation_summary
from ._guarantee import PRE_RESERVATION_REFUSALS, PartySpend, federation_guarantee
from ._marginals_text import marginals_record
from ._metrics import forest_metrics
from ._node_wait import wait_for_nodes
from ._outcomes import EvaluationSkip, OutcomeReason, PartyStatus, RunStatus
from ._output_space import output_space_problem, report_unwritten_text, write_failed_text, write_failure_text
from ._party_names import claimed_party_id, name_evaluation, who
from ._party_text import party_reason, party_text
from ._readiness import PIN_REFUSAL, READINESS_SECONDS, readiness_round
from ._report import PartyOutcome, RunReport
from ._round_trip import round_trip
from ._run_control import failure_text, resumed_evaluation_skip, too_few_connected_text
from ._run_files import RunFiles, check_run_files
from ._selection import select_parties
from ._size_bounds import TRANSPORT_LIMIT
from ._spend_store import SpendStore

__all__ = ["MODEL_FILE", "REPORT_FILE", "run_federation"]

log = logging.getLogger("edprf.coordinator")
MODEL_FILE = "global-model.edprf"
REPORT_FILE = "report.json"


def _train_request(
    cfg: CoordinatorConfig,
    run_id: str,
    schema: Schema,
    n_parties: int,
    registry: PartyKeyRegistry | None,
    spend_record: str = "",
) -> TrainRequest:
    """One request for every party: its id names the training (``request-tag``), each party's ledger keys on it.

    The marginals part's share and grid are the consortium's (:meth:`CoordinatorConfig.marginals_plan`, public
    figures and the number of parties asked): every party's histograms land on one grid and are summed.
    """
    marginals_share, marginals_bins = cfg.marginals_plan(schema, max(1, n_parties))
    return TrainRequest(
        request_id=train_request_id(cfg.request_tag or run_id),
        run_id=run_id,
        schema_fingerprint=schema.fingerprint,
        epsilon=cfg.epsilon,
        max_depth=cfg.max_depth,
        n_trees=cfg.n_trees,
        split_mode=cfg.split_mode,
        n_bins=cfg.n_bins,
        relation=cfg.relation,
        leaf=cfg.leaf,
        depth_rule=cfg.depth_rule,
        seed=cfg.seed,  # parties derive their own stream from it and their party id
        marginals_share=marginals_share,
        marginals_bins=marginals_bins,
        # parties check their own entry before reserving epsilon (a wrong party-id or key is refused for free)
        registered_parties=registration_text(registry) if registry is not None else "",
        # what each party's verified releases charged: a party whose ledger holds less counts the rest again
        spend_record=spend_record,
    )


def _spend_store(cfg: CoordinatorConfig, registry: PartyKeyRegistry | None) -> SpendStore | None:
    """The spend record (``spend-record``), opened before any request is sent; None without one."""
    path = cfg.spend_record_file
    if path is None or registry is None:
        return None
    try:
        store = SpendStore(path, {party: registry.key_id(party) for party in registry})
        log.info("spend record %s: %s", store.path.absolute(), count_text(store.rows(), "row"))
        for party, amount in sorted(store.former_key_totals().items()):
            log.warning(
                "spend record: %s has epsilon %s recorded under a former signing key; it still counts for %s "
                "(a rotated key holds the same records). If that was another consortium's party of the same id, "
                "give each consortium its own spend-record",
                party,
                f"{float(amount):g}",
                party,
            )
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"spend-record: cannot open {path}: {exc}") from None
    return store


def _record(spends: SpendStore, party_id: str, request: str, epsilon: float, run_id: str, report: RunReport) -> None:
    """One row of the spend record (once per party and request).  A failure is logged in one line, kept in the
    report (``spend_record_unwritten``, said by the run's summary) and the run goes on: the record only adds a
    check to the parties' own ledgers, which charged the row all the same."""
    # a party's ledger charges a request's epsilon as the shortest decimal of its float (exact_epsilon)
    charged = Fraction(repr(float(epsilon)))
    try:
        spends.add(party_id, request, charged, run_id)
    except (OSError, sqlite3.Error) as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.error("spend record %s: could not record %s for %s (%s)", spends.path, request, party_id, error)
        log.debug("spend record %s: the write that failed", spends.path, exc_info=True)
        report.spend_record_unwritten.append(
            {"party_id": party_id, "request": request, "epsilon": float(epsilon), "error": error}
        )


def _not_connected(
    grid: Grid, nodes: list[int], cfg: CoordinatorConfig, registry: PartyKeyRegistry, report: RunReport
) -> None:
    """The report's ``absent_parties`` before any request: the registered parties whose SuperNode did not connect,
    or None and why when a connected SuperNode is matched to no party (:mod:`server._connected_parties`)."""
    keys_dir = cfg.supernode_keys_path
    connected = _connected(grid, nodes, cfg, registry)
    missing = connected.not_connected(registry)
    if missing is None:
        source = f"supernode-keys-dir {keys_dir}" if keys_dir is not None else "no supernode-keys-dir given or found"
        report.absent_parties, report.absent_parties_unknown = None, connected.unknown_text(len(registry), source)
    else:
        report.absent_parties = missing


def _node_names(
    grid: Grid, nodes: list[int], cfg: CoordinatorConfig, registry: PartyKeyRegistry | None
) -> dict[int, str]:
    """The connected nodes named by their registration (:mod:`server._connected_parties`: the SuperNode key in
    ``supernode-keys-dir``, or the name a node was registered under), for people; ``{}`` without ``keys-dir``."""
    if registry is None:
        return {}
    return dict(_connected(grid, nodes, cfg, registry).named)


def _connected(grid: Grid, nodes: list[int], cfg: CoordinatorConfig, registry: PartyKeyRegistry) -> ConnectedParties:
    """The connected nodes matched to the registered parties by ``supernode-keys-dir``'s keys (or none given)."""
    keys_dir = cfg.supernode_keys_path
    owners = supernode_key_owners(keys_dir) if keys_dir is not None else {}
    return connected_parties(grid, nodes, owners, list(registry))


def _pin_label(node: int, names: dict[int, str]) -> str:
    """A node whose app pin refused the bundle, as people know it: ``hospital-b (node 5163...)``, else its node id."""
    return f"{names[node]} (node {node})" if node in names else f"node {node}"


def _log_pin_refusal(step: str, node: int, names: dict[int, str], reason: str) -> None:
    log.warning(
        "%s: %s runs an app pin (edprf party install-pin) that refuses this app bundle: %s; that party "
        "adds the bundle's hash to its trusted list (runbook section 6) or the run goes without it",
        step,
        _pin_label(node, names),
        party_text(reason),
    )


def _too_few_ready(
    grid: Grid,
    nodes: list[int],
    request: dict,
    cfg: CoordinatorConfig,
    report: RunReport,
    registry: PartyKeyRegistry | None,
) -> bool:
    """The readiness round (:mod:`server._readiness`); True, with the failed run in ``report``, when fewer than
    ``min-parties`` parties would serve the train request, which is then sent to none."""
    t0 = time.perf_counter()
    readiness = readiness_round(grid, nodes, request, min(cfg.round_timeout, READINESS_SECONDS))
    report.timings["readiness_round_s"] = time.perf_counter() - t0
    report.bytes_sent += len(json.dumps(request)) * len(nodes)
    unsure = [f"node {n} (error)" for n in readiness.errored] + [f"node {n} (no answer)" for n in readiness.silent]
    # a pin refusal names no party (the launcher runs before edprf): named by the node's registration (review
    # rev-day2 U8), as the parties that did not connect are
    names = _node_names(grid, nodes, cfg, registry) if readiness.pinned_out else {}
    refusals = [
        f"{claimed_party_id(r) or f'node {n}'} ({party_reason(r.get('reason'))})" for n, r in readiness.refused.items()
    ] + [
        f"{names.get(n) or f'node {n}'} (its SuperNode's app pin refuses this app bundle)" for n in readiness.pinned_out
    ]
    if refusals or unsure:
        # WARNING: an operator's log filter or a unit's journal should show a party that refuses or does not answer
        # (review rev-auto A7); the run may still go on with the others
        log.warning(
            "readiness: %d of %d parties would serve the request%s%s",
            readiness.would_serve,
            len(nodes),
            f"; refused: {', '.join(refusals)}" if refusals else "",
            f"; counted as serving: {', '.join(unsure)}" if unsure else "",
        )
    for party, shared in readiness.shared_party_ids.items():
        log.warning(
            "readiness: nodes %s all answer as party %s (a claim, checked on its release): if they are SuperNodes "
            "run from copies of one party's state, each spends that party's whole cap on the same records "
            "(deploy/README.md section 3); the run keeps at most one release of a party",
            ", ".join(str(n) for n in shared),
            party,
        )
    for node in readiness.pinned_out:
        _log_pin_refusal("readiness", node, names, readiness.pinned_out[node])
    if readiness.would_serve >= cfg.min_parties:
        return False
    heard = set()
    failed = {**readiness.errored, **readiness.pinned_out}  # error replies, the app pin's refusals among them
    for node in nodes:
        outcome = PartyOutcome(node_id=node, status=PartyStatus.NO_REPLY, reason=OutcomeReason.TIMEOUT)
        outcome.readiness_only = True
        if node in readiness.serving:
            outcome.status, outcome.reason = PartyStatus.NOT_ASKED, OutcomeReason.TOO_FEW_READY
            outcome.party_id = claimed_party_id(readiness.serving[node])
        elif node in readiness.refused:
            result = readiness.refused[node]
            outcome.status, outcome.party_id = PartyStatus.REFUSED, claimed_party_id(result)
            outcome.reason = party_reason(result.get("reason"))
            outcome.message = party_text(result.get("message", ""))
        elif node in failed:
            outcome.status, outcome.reason = PartyStatus.FAILED, OutcomeReason.CLIENT_ERROR
            outcome.message = party_text(failed[node])
            outcome.party_id = names.get(node, "")  # a pin refusal's node, named by its registration
        heard.add(outcome.party_id)
        report.parties.append(outcome)
    if registry is not None:  # named by an answer (an untrusted label, as a refusal's is after a train request)
        report.absent_parties, report.absent_parties_unknown = sorted(set(registry) - heard), ""
    report.status = RunStatus.FAILED
    report.guarantee = "no model: fewer parties would serve the request than min-parties; no train request was sent"
    report.failure = (
        f"{readiness.would_serve} of {count_text(len(nodes), 'connected party', 'connected parties')} would serve "
        f"the request (readiness round), min-parties is {cfg.min_parties}; no train request was sent, so no party "
        "spent epsilon. "
        + "; ".join(f"{who(p)}: {p.reason}" for p in report.parties if p.status == PartyStatus.REFUSED)[:2000]
    )
    return True


def _result(reply: Message) -> dict:
    return dict(reply.content.config_records[RESULT_KEY])


def run_federation(grid: Grid, cfg: CoordinatorConfig, run_id: str, files: RunFiles | None = None) -> RunReport:
    """One federated training and evaluation; returns (and saves) the run report.

    ``files``: the run's schema and rows as :func:`server._run_files.check_run_files` read them before any request
    (None: read here, before any request too).
    """
    started = time.perf_counter()
    files = check_run_files(cfg) if files is None else files
    schema = files.schema
    out_dir = Path(cfg.output_dir)
    make_owner_only_dirs(out_dir)
    for name in (MODEL_FILE, REPORT_FILE):  # left by a coordinator killed while writing (save_atomic's temp names)
        for stale in out_dir.glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)
    registry = PartyKeyRegistry.from_directory(cfg.keys_dir) if cfg.keys_dir else None
    if registry is None and not cfg.sim_dir:
        log.warning(
            "run %s: no keys-dir: releases are not authenticated, any node may release under any party's id", run_id
        )
    report = RunReport(
        run_id=run_id, parameters={k: v for k, v in vars(cfg).items()}, schema_fingerprint=schema.fingerprint
    )
    try:
        spends = _spend_store(cfg, registry)  # opened before any request: a path it cannot use fails the run here
    except ValueError as exc:
        report.status = RunStatus.FAILED
        report.guarantee = "no model: the spend record cannot be used; no request was sent"
        report.failure = f"{exc}: no request was sent, nothing was spent"
        report.timings["total_s"] = time.perf_counter() - started
        _save_report(report, out_dir)
        return report
    wanted = cfg.parties_to_wait_for
    nodes = wait_for_nodes(grid, wanted, cfg.node_wait_timeout)
    log.info("run %s: %s connected", run_id, count_text(len(nodes), "party", "parties"))
    if len(nodes) < wanted and registry is not None:  # who did not connect, when the registrations say it
        _not_connected(grid, nodes, cfg, registry, report)
    if len(nodes) < cfg.min_parties:  # the run cannot make a model: no party is asked to spend for it
        report.status = RunStatus.FAILED
        report.guarantee = "no model: fewer connected parties than min-parties; no request was sent"
        report.failure = too_few_connected_text(
            len(nodes), cfg.min_parties, cfg.node_wait_timeout, report.absent_parties, report.absent_parties_unknown
        )
        log.debug("run %s: %s", run_id, report.failure)  # the run's summary says it
        report.timings["total_s"] = time.perf_counter() - started
        _save_report(report, out_dir)
        return report
    if len(nodes) < wanted:
        log.warning(
            "run %s: %d of %d expected parties connected within %.0f s; going on without the others%s",
            run_id,
            len(nodes),
            wanted,
            cfg.node_wait_timeout,
            f" (not connected: {', '.join(report.absent_parties[:20])})" if report.absent_parties else "",
        )
    record = spend_record_text(spends.totals(), spends.key_ids) if spends is not None else ""
    train_request = _train_request(cfg, run_id, schema, len(nodes), registry, record)
    request = train_request.to_record()
    policy = _release_policy(cfg, schema, train_request, registry is not None)
    if problem := output_space_problem(out_dir, len(nodes), policy.max_bytes, len(schema.to_toml().encode("utf-8"))):
        report.status = RunStatus.FAILED  # before any party is asked to spend (server._output_space)
        report.guarantee = "no model: the output directory cannot hold the run's files; no request was sent"
        report.failure = problem
        log.debug("run %s: %s", run_id, problem)  # the run's summary says it
        report.timings["total_s"] = time.perf_counter() - started
        _save_report(report, out_dir)
        return report
    if cfg.readiness_check and _too_few_ready(grid, nodes, request, cfg, report, registry):
        report.timings["total_s"] = time.perf_counter() - started
        _save_report(report, out_dir)
        return report
    messages = [
        Message(
            content=RecordDict({REQUEST_KEY: ConfigRecord(request)}), dst_node_id=node, message_type=MessageType.TRAIN
        )
        for node in nodes
    ]
    t0 = time.perf_counter()
    replies = {r.metadata.src_node_id: r for r in round_trip(grid, messages, timeout=cfg.round_timeout)}
    report.timings["train_round_s"] = time.perf_counter() - t0

    accepted = []
    seen_parties: dict[str, tuple[int, bytes]] = {}  # party id -> the node and release accepted for it
    seen_content: dict[bytes, tuple[str, int]] = {}  # a count release's content -> its party and node
    heard: set[str] = set()  # parties named by a reply: a refusal's claim, a signed release (accepted or not)
    pinned_out: dict[int, str] = {}  # nodes whose app pin refused this bundle (readiness-check=false)
    for node in nodes:
        outcome = PartyOutcome(node_id=node, status=PartyStatus.NO_REPLY, reason=OutcomeReason.TIMEOUT)
        report.parties.append(outcome)
        reply = replies.get(node)
        if reply is None:
            continue
        if reply.has_error():
            outcome.status, outcome.reason = PartyStatus.FAILED, OutcomeReason.CLIENT_ERROR
            outcome.message = party_text(reply.error.reason)
            if PIN_REFUSAL.search(str(reply.error.reason)):  # refused before any edprf code ran: spent nothing
                pinned_out[node] = str(reply.error.reason)
            continue
        try:
            result = _result(reply)
        except KeyError:
            outcome.status, outcome.reason = PartyStatus.REJECTED, OutcomeReason.MALFORMED
            continue
        if result.get("status") != ReplyStatus.RELEASED:
            outcome.status, outcome.party_id = PartyStatus.REFUSED, claimed_party_id(result)
            heard.add(outcome.party_id)
            outcome.reason = party_reason(result.get("reason"))
            outcome.message = party_text(result.get("message", ""))
            continue
        payload = result.get("release")
        if not isinstance(payload, (bytes, bytearray)):
            outcome.status, outcome.reason = PartyStatus.REJECTED, OutcomeReason.MALFORMED
            got = "nothing" if payload is None else type(payload).__name__
            outcome.message = f"the reply says released but carries no release bytes (got {got})"
            continue
        payload = bytes(payload)
        outcome.release_bytes = len(payload)
        report.bytes_received += len(payload)
        try:
            release = decode_release(payload, schema, policy, registry)
        except InvalidRelease as exc:
            outcome.status, outcome.reason, outcome.message = (
                PartyStatus.REJECTED,
                str(exc.reason),
                party_text(str(exc)),
            )
            if exc.reason == Reason.TOO_LARGE and policy.max_bytes < cfg.max_release_bytes:
                outcome.message += " (the most an honest release answering this request can take; not read)"
            charge = signed_charge(payload, schema, policy.max_bytes, registry) if spends is not None else None
            if charge is not None:  # refused, but signed by its party: its ledger charged for it all the same
                # (whichever node relayed the bytes: the outcome stays the node's, the signer is named)
                outcome.message += f" (signed by {charge.party_id}, charged epsilon {charge.epsilon:g})"
                outcome.rejected_release_epsilon = charge.epsilon
                heard.add(charge.party_id)
                _record(spends, charge.party_id, train_request_id(charge.run_id), charge.epsilon, run_id, report)
            continue
        if spends is not None:  # a verified, signed release: its party's ledger charged its epsilon; keyed by
            # the run that made it (a release resent for a reused request-tag is the same one: recorded once)
            _record(spends, release.party_id, train_request_id(release.run_id), release.params.epsilon, run_id, report)
        mismatch = request_mismatch(release, train_request, cfg)
        if (
            mismatch is None
            and release.run_id != run_id
            and registry is not None
            and not bound_to_run(payload, run_id, result.get("binding"), release.party_id, registry)
        ):
            # a release of an earlier run (request-tag) counts only with its party's signature binding it to
            # this run: a copy sent by anyone else would take the place of the party it names
            mismatch = (
                OutcomeReason.REPLAYED_RELEASE,
                "a release of another run, without its party's binding to this run",
            )
        if mismatch is None or mismatch[0] != OutcomeReason.REPLAYED_RELEASE:  # a replay says nothing of its
            heard.add(release.party_id)  # signer now: a node may relay another party's old release
        if mismatch is not None:  # the node is not named after the release: it may relay another party's
            outcome.status, (outcome.reason, outcome.message) = PartyStatus.REJECTED, mismatch
            outcome.message += f" (a release {'signed by' if release.signed else 'naming'} {release.party_id})"
            continue
        outcome.party_id = release.party_id
        if release.party_id in seen_parties:
            outcome.status, outcome.reason = PartyStatus.REJECTED, OutcomeReason.DUPLICATE_PARTY
            first, first_payload = seen_parties[release.party_id]
            outcome.message = f"party {release.party_id!r} already contributed to this run from node {first}" + (
                ": the same release again"
                if payload == first_payload
                else ": two nodes released as this party ("
                + ("" if release.signed else "unsigned, no keys-dir: another node may be speaking for it; or ")
                + "SuperNodes run from copies of one party's state each spend its whole cap on the same records; "
                "deploy/README.md section 3)"
            )
            continue
        content = count_content_digest(release)
        if content in seen_content:
            outcome.status, outcome.reason = PartyStatus.REJECTED, OutcomeReason.DUPLICATE_CONTENT
            first_party, first = seen_content[content]
            outcome.message = (
                f"the same trees and leaf counts as party {first_party!r}'s release (node {first}): releases drawn "
                "with independent noise do not repeat each other, so one of the two parties copied the other's; the "
                "first to arrive is counted"
            )
            continue
        if content is not None:
            seen_content[content] = (release.party_id, node)
        seen_parties[release.party_id] = (node, payload)
        outcome.status, outcome.reason, outcome.n_trees = PartyStatus.ACCEPTED, "", release.forest.n_trees
        outcome.epsilon, outcome.signed = release.params.epsilon, release.signed
        outcome.sampler = release.params.sampler
        outcome.resumed_from_run = release.run_id if release.run_id != run_id else ""  # charged by that run
        outcome.max_depth, outcome.depth_rule = release.params.max_depth, release.params.depth_rule
        outcome.count_epsilon = release.params.count_epsilon
        outcome.marginals_share, outcome.marginals_bins = release.params.marginals_share, release.params.marginals_bins
        accepted.append(release)
    if pinned_out:  # named by their registration, as in the readiness round (review rev-day2 U8, U11)
        names = _node_names(grid, nodes, cfg, registry)
        for p in report.parties:
            if p.node_id in pinned_out:
                p.party_id = p.party_id or names.get(p.node_id, "")
                heard.add(p.party_id)
                _log_pin_refusal("train round", p.node_id, names, pinned_out[p.node_id])
    # parts in party-id order, not in the order of node ids (random per run): the same releases
    # make the same forest, and the same floating-point sums at prediction
    accepted.sort(key=lambda r: r.party_id)
    for p in report.parties:
        if p.status == PartyStatus.REJECTED and p.release_bytes:  # a release came: its ledger charged for it
            p.rejected_release_epsilon = p.rejected_release_epsilon or cfg.epsilon  # its signature's, if it shows
        if p.status != PartyStatus.ACCEPTED:
            # the run's summary names each such party with its reason (summary_lines): at DEBUG here, or the run's
            # log, which shows this logger's INFO lines (protocol.flower_console), says it twice
            log.debug("%s %s: %s %s", who(p), p.status, p.reason, p.message)

    if registry is not None:  # now by the replies (what was known before the request is in the log's warning)
        report.absent_parties, report.absent_parties_unknown = sorted(set(registry) - heard), ""
        if report.absent_parties:
            log.debug(  # the run's summary names them with what it can mean
                "run %s: registered parties not heard from: %s", run_id, ", ".join(report.absent_parties[:20])
            )
    report.bytes_sent += len(json.dumps(request)) * len(nodes)
    if len(accepted) < cfg.min_parties:
        return _too_few_releases(report, cfg, run_id, started, out_dir)

    try:
        if files.validation is not None:
            accepted = _assess_parties(cfg, files, accepted, report)
        if len(accepted) < cfg.min_parties:  # the quality checks dropped parties: the same rule, on what is kept
            return _too_few_releases(report, cfg, run_id, started, out_dir, "kept after the quality checks")
        _model_and_evaluation(grid, cfg, run_id, files, accepted, report, out_dir, spends)
    except Exception as exc:
        written = write_failure_text(exc)
        if written is None:
            log.exception("run %s: failed after the releases arrived", run_id)
        else:  # the operator's fix is in the one line (the summary repeats it); the traceback only at DEBUG
            log.error("run %s: failed after the releases arrived: %s", run_id, written)
            log.debug("run %s: the write that failed", run_id, exc_info=True)
        report.status = RunStatus.FAILED
        report.failure = (
            f"the coordinator failed after the releases arrived ({type(exc).__name__}); see its log"
            if written is None
            else write_failed_text(written, cfg.request_tag)
        )
        report.timings["total_s"] = time.perf_counter() - started
        _save_report(report, out_dir)
        return report
    report.status = RunStatus.COMPLETED
    report.timings["total_s"] = time.perf_counter() - started
    _save_report(report, out_dir)
    return report


def _save_report(report: RunReport, out_dir: Path) -> None:
    """Write the run's report.  When that fails (a full disk), the run fails with a ``failure`` that says so and
    what the parties spent, and nothing is raised: the caller still has the report in memory, and the ServerApp
    logs its summary (the run's only record then) and that failure."""
    path = out_dir / REPORT_FILE
    try:
        report.save(path)
    except OSError as exc:
        written = write_failure_text(exc) or f"{path}: {exc.strerror or type(exc).__name__}"
        log.error("run %s: its report could not be written (%s)", report.run_id, written)
        log.debug("run %s: the write that failed", report.run_id, exc_info=True)
        if report.failure:
            report.failure += f"; the run's report could not be written either ({written})"
        else:
            report.failure = report_unwritten_text(written, report.model_path)
        report.status = RunStatus.FAILED


def _release_policy(cfg: CoordinatorConfig, schema: Schema, request: TrainRequest, signed: bool) -> ReleasePolicy:
    """What the coordinator decodes for ``request``: the run's limits, the grids it asked for (``n-bins`` and
    ``marginals-bins`` above the decoder's default cap included), and no release above the largest an honest party
    can send for it (:func:`protocol.request_release_bytes`), refused before it is parsed."""
    largest = request_release_bytes(schema, request)
    return ReleasePolicy(
        max_epsilon=cfg.epsilon,
        max_depth=cfg.max_depth,
        max_n_trees=cfg.n_trees,
        max_bytes=min(cfg.max_release_bytes, largest),
        max_n_bins=max(ReleasePolicy.max_n_bins, request.n_bins, request.marginals_bins),
        require_signature=signed,
        allowed_relations=(cfg.relation,),
    )


def _too_few_releases(
    report: RunReport, cfg: CoordinatorConfig, run_id: str, started: float, out_dir: Path, kept: str = ""
) -> RunReport:
    """A failed run's report, saved: fewer valid releases than ``min-parties`` (``kept``: at which step)."""
    report.status = RunStatus.FAILED
    report.guarantee = "no model: fewer valid releases than min-parties" + (f" {kept}" if kept else "")
    report.failure = failure_text(report, cfg.min_parties, kept)
    log.debug(  # the run's summary says it, with each party's reason
        "run %s: %s%s, %d required; no model saved",
        run_id,
        count_text(len(report.accepted), "valid release"),
        f" {kept}" if kept else "",
        cfg.min_parties,
    )
    report.timings["total_s"] = time.perf_counter() - started
    _save_report(report, out_dir)
    return report


def _influence_cuts(accepted: list, run_id: str, tolerated: int) -> list[dict[str, Any]]:
    """Where the merge's bounded influence counts less than half of what a release claims for a class, for the
    report (:func:`edprf_core.forest.influence_cuts`: post-processing of released counts, no ε)."""
    cuts = influence_cuts([r.forest for r in accepted], [r.party_id for r in accepted], tolerated)
    for cut in cuts:
        log.info(  # the summary says it with what it means; the log keeps the figures
            "run %s: bounded influence counts %.0f of %s's weight %.0f on class %r in the %s",
            run_id,
            cut.counted,
            cut.party,
            cut.claimed,
            cut.label,
            cut.part,
        )
    return [asdict(cut) for cut in cuts]


def _bounded_influence(n_parts: int, run_id: str, tolerated: int) -> dict[str, Any]:
    """Whether the merge bounds each party's say (item 5 of :mod:`edprf_core._leaf_distribution`: from
    :data:`~edprf_core.forest.BOUNDED_INFLUENCE_PARTS` parts on), and against how many hostile parties acting
    together (``tolerated-parties``, lowered to what ``n_parts`` can bound), for the report; a warning when it
    does not bound them all."""
    needs, against = bounded_influence_parts(tolerated), tolerated_among(n_parts, tolerated)
    if n_parts < BOUNDED_INFLUENCE_PARTS:
        log.warning(
            "run %s: %s merged: one party's release can decide the model (bounded influence takes %d)",
            run_id,
            count_text(n_parts, "party's release", "parties' releases"),
            BOUNDED_INFLUENCE_PARTS,
        )
    elif n_parts < needs:
        log.warning(
            "run %s: %s merged: the merge bounds %d hostile party acting alone, not the %d of tolerated-parties "
            "(that takes %d releases)",
            run_id,
            count_text(n_parts, "party's release", "parties' releases"),
            against,
            tolerated,
            needs,
        )
    return {
        "applies": n_parts >= BOUNDED_INFLUENCE_PARTS,
        "parts": n_parts,
        "needs": BOUNDED_INFLUENCE_PARTS,
        "tolerated_parties": tolerated,
        "bounded_against": against,
    }


def _model_and_evaluation(
    grid: Grid,
    cfg: CoordinatorConfig,
    run_id: str,
    files: RunFiles,
    accepted: list,
    report: RunReport,
    out_dir: Path,
    spends: SpendStore | None = None,
) -> None:
    """Merge and save the model of the kept releases, evaluate it."""
    report.influence_cuts = _influence_cuts(accepted, run_id, cfg.tolerated_parties)
    report.bounded_influence = _bounded_influence(len(accepted), run_id, cfg.tolerated_parties)
    t0 = time.perf_counter()
    manifest = {
        "run_id": run_id,
        "parameters": report.parameters,
        "rejections": report.rejections(),
        "contributions": report.contributions,
        "selection": report.selection,
        # a simulation's figures are the exact sizes of the parties it laid out: the model's guarantee says so
        ROW_COUNTS_KEY: "simulation" if cfg.sim_dir and (cfg.consortium_rows or cfg.max_party_rows) else "declared",
    }
    model = build_global_model(files.schema, accepted, manifest, tolerated_parties=cfg.tolerated_parties)
    view = load_global_model(model)
    report.merge_seconds = time.perf_counter() - t0
    model_path = save_atomic(out_dir / MODEL_FILE, model, mode=OWNER_ONLY_FILE)
    report.model_path, report.model_bytes = str(model_path), len(model)
    report.n_trees = view.forest.n_trees
    report.guarantee = federation_guarantee(view.forest, _spends(report), *_left_out(report))
    log.info(
        "run %s: global model of %s from %s saved to %s",
        run_id,
        count_text(view.forest.n_trees, "tree"),
        count_text(len(accepted), "party", "parties"),
        model_path,
    )

    if len(model) > TRANSPORT_LIMIT and (cfg.evaluation_epsilon > 0 or cfg.exact_metrics):
        log.error(
            "run %s: the model (%d bytes) exceeds the transport limit (%d bytes); evaluation round skipped",
            run_id,
            len(model),
            TRANSPORT_LIMIT,
        )
        report.federated_evaluation = {
            "skipped": EvaluationSkip.MODEL_TOO_LARGE_FOR_TRANSPORT,
            "model_bytes": len(model),
            "transport_limit": TRANSPORT_LIMIT,
        }
    elif (skip := resumed_evaluation_skip(report, cfg, _evaluated_runs(report, spends))) is not None and (
        cfg.evaluation_epsilon > 0 or cfg.exact_metrics
    ):
        log.debug("run %s: %s", run_id, skip["message"])  # the run's summary says it (federated_evaluation_lines)
        report.federated_evaluation = skip
    elif cfg.evaluation_epsilon > 0 or cfg.exact_metrics:
        _evaluate_if_informative(grid, cfg, run_id, model, view.forest, report, spends)
    report.marginals = marginals_record(view.forest)
    if files.test is not None:
        X_test, y_test = files.test
        report.central_evaluation = forest_metrics(view.forest, X_test, y_test)
        report.marginals = marginals_record(view.forest, X_test, y_test)


def _evaluated_runs(report: RunReport, spends: SpendStore | None) -> dict[str, str] | None:
    """Which of the runs the accepted releases were resent from held an evaluation round, and how (noised counts or
    exact metrics), per the spend record; None without one (or when it cannot be read: the summary then says it does
    not know)."""
    if spends is None:
        return None
    runs = {p.resumed_from_run for p in report.accepted if p.resumed_from_run}
    try:
        return spends.evaluated_runs(runs)
    except (OSError, sqlite3.Error) as exc:
        log.warning("spend record %s: cannot tell whether run(s) %s evaluated the model: %s", spends.path, runs, exc)
        return None


def _evaluate_if_informative(
    grid: Grid,
    cfg: CoordinatorConfig,
    run_id: str,
    model: bytes,
    forest,
    report: RunReport,
    spends: SpendStore | None = None,
) -> None:
    """The evaluation round, or, when its ε cannot give the interval asked for, nothing sent and nothing spent."""
    plan = evaluation_plan(cfg, len(report.accepted))
    if not plan.send:  # the rule working as designed, not a fault: the report and the summary say it
        log.debug("run %s: %s", run_id, plan.message)  # the run's summary says it (federated_evaluation_lines)
        report.federated_evaluation = plan.skipped_record()
        return
    t0 = time.perf_counter()
    report.federated_evaluation, metered = _evaluation_round(
        grid, cfg, run_id, model, [p.node_id for p in report.accepted]
    )
    if spends is not None and not cfg.exact_metrics:  # noised counts came back: each of those ledgers charged
        for p in report.accepted:
            if p.node_id in metered:
                _record(spends, p.party_id, f"{run_id}/{p.node_id}/evaluate", cfg.evaluation_epsilon, run_id, report)
    elif spends is not None and metered:  # exact metrics charge nothing: a marker, for a resumed run to say so (F5)
        _note_exact_evaluation(spends, run_id)
    name_evaluation(report.federated_evaluation, report.parties)
    _charge_evaluation(report, cfg)
    report.guarantee = federation_guarantee(forest, _spends(report), *_left_out(report))
    report.bytes_sent += len(model) * len(report.accepted)
    report.timings["evaluation_round_s"] = time.perf_counter() - t0


def _note_exact_evaluation(spends: SpendStore, run_id: str) -> None:
    """Mark ``run_id`` as evaluated with exact metrics in the spend record (review rev-s65 F5); a failure is logged and
    the run goes on (a resumed run then says the record holds no evaluation of this one, and why that may be)."""
    try:
        spends.note_exact_evaluation(run_id)
    except (OSError, sqlite3.Error) as exc:
        log.error("spend record %s: could not record run %s's exact-metrics evaluation (%s)", spends.path, run_id, exc)


def _left_out(report: RunReport) -> tuple[int, int]:
    """How many parties released but were left out, by selective aggregation and as flagged low quality
    (``exclude-flagged``): their ε is spent all the same."""
    flagged = sum(
        p.status == PartyStatus.DROPPED and p.reason == OutcomeReason.FLAGGED_LOW_QUALITY for p in report.parties
    )
    return len((report.selection or {}).get("dropped", [])), flagged


def _spends(report: RunReport) -> list[PartySpend]:
    return [
        PartySpend(
            p.party_id or str(p.node_id),
            p.epsilon,
            p.evaluation_epsilon,
            exact_metrics=p.exact_metrics,
            seeded_evaluation=p.seeded_evaluation,
            release_charged_before=bool(p.resumed_from_run),
        )
        for p in report.accepted
    ]


def _charge_evaluation(report: RunReport, cfg: CoordinatorConfig) -> None:
    """Record the evaluation ε of every party that may have been charged (conservative: all but known refusals).

    With exact metrics, every party that may have answered is marked instead: its un-noised
    held-out counts are not DP, and the guarantee must say so.  So are counts noised with the run's
    seed (``seed >= 0``): whoever knows the seed removes the noise.  The releases of such a run say
    NOT DP already, unless they were resent from an unseeded run under a reused request-tag.
    """
    refused = {
        r["node_id"]: r["reason"]
        for r in report.federated_evaluation.get("refused", [])
        if r["reason"] not in ("invalid_metrics", "implausible_metrics")
    }
    for p in report.accepted:
        reason = refused.get(p.node_id)
        # an evaluation's request id is this run's own: refused as reused, it reached the party before (a repeated
        # delivery), and that delivery may have been charged
        if reason not in PRE_RESERVATION_REFUSALS or reason == RefusalReason.REQUEST_ID_REUSED:
            if cfg.exact_metrics:
                p.exact_metrics = True
            else:
                p.evaluation_epsilon = cfg.evaluation_epsilon
                p.seeded_evaluation = cfg.seed >= 0


def _assess_parties(cfg: CoordinatorConfig, files: RunFiles, accepted: list, report: RunReport) -> list:
    """Contribution report, quality flags and (optionally) selective aggregation on validation data."""
    schema = files.schema
    X_val, y_val = files.validation
    merged = merge_forests(
        [r.forest for r in accepted], labels=[r.party_id for r in accepted], tolerated_parties=cfg.tolerated_parties
    )
    codes = merged.encode(X_val)
    y_idx = encode_labels(y_val, schema).astype(np.int64)
    predicted = np.argmax(merged.predict_proba(X_val), axis=1)  # the model of every accepted release, as it pools
    contributions = party_contributions(merged, codes, y_idx, alpha=cfg.flag_alpha, global_predicted=predicted)
    report.contributions = [c.to_dict() for c in contributions]
    outcome_of = {p.party_id: p for p in report.parties if p.status == PartyStatus.ACCEPTED}
    keep = list(range(len(accepted)))
    if cfg.exclude_flagged:
        for i, c in enumerate(contributions):
            if c.flagged:
                keep.remove(i)
                _drop(
                    outcome_of[c.party],
                    OutcomeReason.FLAGGED_LOW_QUALITY,
                    f"its trees put {c.probability_lift:.3f} more probability on the true class of the "
                    f"validation rows than chance, significantly below {c.lift_threshold:.3f} (a tenth of "
                    f"the other parties' median) (p = {c.p_value:.2g})",
                )
    if cfg.selective_aggregation and keep:
        target = cfg.target_parties or None
        # never fewer parts than min-parties, nor than the merge needs to bound tolerated-parties' say: the
        # validation rows cannot tell an honest sharp party from one that skipped its noise
        floor = max(cfg.min_parties, cfg.bounded_influence_parts)
        if all(accepted[i].params.leaf == "counts" for i in keep):
            # candidate sets scored as the model they would make (log-linear pooling of those parties)
            candidates = merge_forests(
                [accepted[i].forest for i in keep],
                labels=[accepted[i].party_id for i in keep],
                tolerated_parties=cfg.tolerated_parties,
            )
            chosen = select_parties(candidates.part_pooling(X_val), y_idx, target, min_parts=floor)
        else:  # label leaves: the parties' votes
            votes = part_votes(merged, codes)
            chosen = select_parties([votes[i] for i in keep], y_idx, target, min_parts=floor)
        kept = [keep[j] for j in chosen.kept]
        for j in chosen.dropped:
            i = keep[j]
            _drop(
                outcome_of[accepted[i].party_id],
                OutcomeReason.NOT_SELECTED,
                "its trees did not raise validation accuracy (selective aggregation)",
            )
        report.selection = {
            "kept": [accepted[i].party_id for i in kept],
            "dropped": [accepted[keep[j]].party_id for j in chosen.dropped],
            "validation_accuracy_path": list(chosen.accuracy_path),
        }
        keep = sorted(kept)
    if not keep:  # every party flagged: no model (min-parties is at least 1), each party's reason in the report
        log.warning("every party was dropped by the quality checks: no model")
        return []
    for i, c in enumerate(contributions):
        log.info(
            "party %s on the validation rows: its trees' vote is right on %.1f %% and agrees with the global model "
            "on %.1f %%; its trees' mean information about the label %.3f bits%s",
            c.party,
            100 * c.accuracy,
            100 * c.agreement_with_global,
            c.information_bits,
            " (FLAGGED: its trees raise the true class's probability far less than the other parties' do: broken "
            "data or another schema?)"
            if c.flagged
            else "",
        )
    return [accepted[i] for i in keep]


def _drop(outcome: PartyOutcome, reason: OutcomeReason, message: str) -> None:
    outcome.status, outcome.reason, outcome.message = PartyStatus.DROPPED, reason, message


def _evaluation_round(
    grid: Grid, cfg: CoordinatorConfig, run_id: str, model: bytes, nodes: list[int]
) -> tuple[dict, set[int]]:
    """The evaluation round's summary, and the nodes that answered with metrics."""
    messages = []
    for node in nodes:
        req = EvaluateRequest(
            request_id=f"{run_id}/{node}/evaluate",
            run_id=run_id,
            epsilon=cfg.evaluation_epsilon,
            exact=cfg.exact_metrics,
            seed=cfg.seed,
        )  # research runs only (-1: production noise)
        content = RecordDict({REQUEST_KEY: ConfigRecord(req.to_record()), MODEL_KEY: ConfigRecord({"bytes": model})})
        messages.append(Message(content=content, dst_node_id=node, message_type=MessageType.EVALUATE))
    replies = []
    answered_nodes = set()
    for reply in round_trip(grid, messages, timeout=cfg.round_timeout):
        node = reply.metadata.src_node_id
        answered_nodes.add(node)
        if reply.has_error():
            replies.append((node, None, "client_error"))
            continue
        if METRICS_KEY not in reply.content.metric_records:
            result = dict(reply.content.config_records.get(RESULT_KEY, {}))
            replies.append((node, None, party_reason(result.get("reason"))))
            continue
        replies.append((node, dict(reply.content.metric_records[METRICS_KEY]), ""))
    no_reply = [node for node in nodes if node not in answered_nodes]
    return evaluation_summary(replies, no_reply, cfg), {node for node, metrics, _ in replies if metrics is not None}
