"""A failed run in the ServerApp's log: one clear line of what failed and what to do, not a traceback.

The ServerApp raises :class:`~server._run_control.RunFailed` so that Flower 1.41 marks the run
``finished:failed`` (``edprf run`` then exits 1).  Flower logs every exception a ServerApp raises at
ERROR with its traceback ("ServerApp raised an exception"), then "Exit Code: 201 ... An unhandled
exception occurred in the ServerApp": both reach ``flwr log`` and ``edprf run``, after the run's
summary, and read as a crash.  :func:`quiet_flower_traceback` puts a filter on Flower's logger
(``flwr``) that turns those two records into DEBUG records when the exception is a ``RunFailed``:
the console shows neither, ``FLWR_LOG_LEVEL=DEBUG`` shows both, traceback included.  Any other
exception keeps Flower's ERROR and its traceback (it is a defect).  :func:`failure_lines` is what
the ServerApp logs instead, at ERROR, before it raises.
"""

from __future__ import annotations

import logging

from ._guarantee import PRE_RESERVATION_REFUSALS
from ._outcomes import PartyStatus
from ._party_names import who
from ._readiness import PIN_REFUSAL
from ._report import PartyOutcome, RunReport
from ._run_control import RunFailed

__all__ = ["failure_lines", "quiet_flower_traceback"]

_NEXT_STEPS = {
    "budget_exhausted": "the request would pass the lifetime epsilon cap (each party's line above says what "
    "remains): ask for an epsilon within what remains; a cap is its party's to set",
    "not_registered": "the party's id or signing key is not in keys-dir: add its public signing key there, or check "
    "the party-id in its policy",
    "schema_mismatch": "the party uses another schema than the coordinator's schema-path: both need the same file",
    "request_id_reused": "the request-tag was used before with other parameters, or by a coordinator with other "
    "registered keys: give a new request-tag",
    "request_spent": "the request-tag's request was started and not completed at the party: give a new request-tag",
    "timeout": "no reply within round-timeout: its SuperNode was not running or replied too late (a party with "
    "many rows or trees, or one whose policy holds its replies with reply-after-seconds, needs a longer "
    "round-timeout); see that party's log",
    "client_error": "the party's ClientApp failed: see that party's SuperNode log (its SuperExec's, when the "
    "SuperNode runs with --isolation process)",
    "too_few_ready": "it would have served, but too few parties would (the readiness round): nothing was sent to "
    "it and it spent nothing; resubmit once the parties above can serve",
    "party_setup": "the party's own files or settings are wrong (its SuperNode log names them): ask its operator to "
    "run `edprf party check --node-config ...` there, which lists every problem",
}
"""What to do about the commonest reasons a party is missing from a failed run."""


def failure_lines(run_id: str, report: RunReport) -> list[str]:
    """The failed run in a few lines: that it failed, then for each reason the parties that gave it and what to do
    (the summary above holds the failure and each party's message)."""
    by_reason: dict[str, list[str]] = {}
    for p in report.parties:
        if p.status != PartyStatus.ACCEPTED:
            by_reason.setdefault(str(p.reason), []).append(who(p))
    if not by_reason:  # the summary's "failure:" line above says why
        return [
            f"edprf run {run_id} FAILED: " + ("the failure is above" if report.failure else f"status {report.status}")
        ]
    lines = [f"edprf run {run_id} FAILED (the failure and each party's reason are above); what to do:"]
    for reason, named in by_reason.items():
        step = _NEXT_STEPS.get(reason) or (
            "outside that party's policy (its line above names the rule): ask within it; the policy is the party's "
            "to set"
            if reason.startswith("policy_")
            else "see its line above (docs/reference/reason-codes.md)"
        )
        lines.append(f"  {', '.join(named)} ({reason}): {step}")
    if any(p.status == PartyStatus.ACCEPTED for p in report.parties):  # with none accepted, min-parties cannot help
        lines.append("  or run without the parties above: a lower min-parties (their releases are then left out)")
    elif report.parties and all(p.readiness_only for p in report.parties):
        ready = sum(p.status == PartyStatus.NOT_ASKED for p in report.parties)
        lines.append(
            f"  or run without the parties that refused: min-parties={ready} or lower"
            if ready
            else "  no party would serve the request as it stands"
        )
        lines.append("  a resubmission needs a new output-dir (this run's report.json stays there); nothing was spent")
    return lines + _spent_lines(run_id, report)


def _spent_lines(run_id: str, report: RunReport) -> list[str]:
    """Who spent epsilon on the failed run's training request, and how to use those releases without spending
    again: the same request-tag (a party resends the release it made for it), the same request (every parameter
    a party checks; the marginals grid, which the number of parties asked sizes, pinned) and a new output-dir
    (this run's report stays where it is)."""
    resendable = [p for p in report.parties if p.status == PartyStatus.ACCEPTED and not p.resumed_from_run]
    rejected = [who(p) for p in report.parties if p.status == PartyStatus.REJECTED and p.release_bytes > 0]
    maybe = [who(p) for p in report.parties if _may_have_reserved(p)]
    pinned = [who(p) for p in report.parties if not p.readiness_only and _pin_refused(p)]
    lines = []
    if pinned:
        lines.append(
            f"  spent nothing: {', '.join(pinned)}: its SuperNode's app pin refused this app bundle before any edprf "
            "code ran; that party adds the bundle's hash to its trusted list (runbook section 6)"
        )
    if resendable:
        lines.append(f"  spent: {', '.join(map(who, resendable))}: its release, which it can resend")
    if rejected:
        lines.append(
            f"  spent: {', '.join(rejected)}: a release the coordinator rejected (resent, it is rejected again)"
        )
    if maybe:
        lines.append(
            f"  may have spent: {', '.join(maybe)} (no reply, or a failure after its ledger reserved the request): "
            "`edprf budget` there shows the entry; once it is released the party can resend it, while it is "
            "reserved or failed the party answers request_spent"
        )
    if resendable or maybe:
        tag = str(report.parameters.get("request_tag") or run_id)
        lines.append(
            f"  to use those releases without spending again: submit with request-tag='{tag}'"
            + _pinned(report, resendable)
            + " and otherwise the same run config, with a new output-dir; a new request-tag, or a request that "
            "differs in any parameter a party checks (request_id_reused), spends again"
        )
    return lines


def _pinned(report: RunReport, released: list[PartyOutcome]) -> str:
    """The marginals grid of the released request, when the run chose it from the number of parties asked (a
    resubmission with more or fewer parties connected would ask for another grid, which the parties refuse)."""
    grids = {(p.marginals_share, p.marginals_bins) for p in released if p.marginals_share > 0}
    if len(grids) != 1 or report.parameters.get("marginals_bins"):
        return ""
    [(_, bins)] = grids
    return f" marginals-bins={bins}"


def _may_have_reserved(p: PartyOutcome) -> bool:
    """No reply, a ClientApp failure, or a refusal a party may decide after its ledger reserved the request."""
    if p.readiness_only:  # answered the readiness round only: no train request reached it
        return False
    if _pin_refused(p):  # the launcher refused before edprf ran (rev-day2 U11)
        return False
    if p.status in (PartyStatus.NO_REPLY, PartyStatus.FAILED):
        return True
    # request_spent: an earlier attempt's reservation, which this run neither made nor can complete
    return p.status == PartyStatus.REFUSED and p.reason not in PRE_RESERVATION_REFUSALS | {"request_spent"}


def _pin_refused(p: PartyOutcome) -> bool:
    """A ClientApp failure that is the party's app-pinning launcher refusing the bundle (edprf_fl/
    _pinned_clientapp.py: a ``PermissionError`` raised before Flower loads the app, so before any ledger is opened),
    as the readiness round recognises it (:data:`server._readiness.PIN_REFUSAL`)."""
    return p.status == PartyStatus.FAILED and bool(PIN_REFUSAL.search(p.message))


class _RunFailedAtDebug(logging.Filter):
    """Demotes Flower's records about a :class:`RunFailed` (its traceback, then its exit message) to DEBUG."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, RunFailed):
            self.seen = True
        elif self.seen and record.levelno >= logging.ERROR and str(record.msg).startswith("Exit Code: "):
            self.seen = False  # its exit message: a later exit in a long-lived process is not this one
        else:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


def quiet_flower_traceback() -> None:
    """Put the filter on Flower's logger (once per process); call it before the ServerApp raises ``RunFailed``."""
    flower = logging.getLogger("flwr")
    if not any(isinstance(f, _RunFailedAtDebug) for f in flower.filters):
        flower.addFilter(_RunFailedAtDebug())
