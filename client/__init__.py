"""The party: local data, policy, budget ledger, and the Flower ClientApp.

:func:`handle_train`, :func:`handle_evaluate` and :func:`handle_query` (readiness) answer the coordinator's messages (the ClientApp and the
simulation engines call them); they import Flower, so they load on first use and the rest of the package
works in the slim install.
"""

# The packages this one builds on, whole, before any of their submodules: Flower's simulation loads the
# ServerApp and the ClientApps on several threads at once (its check of a ClientApp's module imports it
# outside Flower's import lock).  A thread that meets a package another thread is still initializing waits
# for it only when it imports the package itself; importing a submodule (``protocol.messages``) goes on
# concurrently, and two threads importing one package's submodules in different orders can get a partially
# initialized module ("cannot import name 'PrivateKey' from partially initialized module 'protocol._keys'",
# seen in CI).  Imported whole first, each package is initialized by one thread while the others wait.
import edprf_core  # noqa: F401  (isort: keep first)
import protocol  # noqa: F401

from ._budget_state import BudgetState, LedgerStatus, read_budget
from ._cap_record import pending_cap_change_text, recorded_cap
from ._exhausted import budget_exhausted
from ._held_out_record import HOLDOUT_SALT_KEY
from ._held_out_split import held_out_rows
from ._ledger import (
    CAP_CHANGE_COUNT_KEY,
    CAP_CHANGES_KEY,
    CAP_KEY,
    COORDINATOR_RECORD,
    NOT_DP_COUNT_KEY,
    NOT_DP_KEY,
    PARTY_ID_KEY,
    PER_RECORD_SPEND,
    RELATION_CHANGE_COUNT_KEY,
    RELATION_CHANGES_KEY,
    RELATION_KEY,
    AuditRecords,
    BudgetExhausted,
    BudgetLedger,
    Delivery,
    EntryState,
    LedgerBusy,
    LedgerEntry,
    LedgerOfAnotherParty,
    LedgerOfAnotherVersion,
    LedgerTooLarge,
    ReleaseParts,
    exact_epsilon,
    format_epsilon,
    not_dp_headline,
    not_dp_replies,
    read_ledger_readonly,
    read_meta_readonly,
    read_release_readonly,
    total_spent,
    trail_lines,
    whole_trail,
)
from ._ledger_anchor import LEDGER_ID_KEY, LedgerAnchor, anchor_path, carried, read_anchor
from ._ledger_backup import LedgerBackup, backup_ledger, check_backup_target
from ._open_reservations import (
    RESERVATION_LEFT_AFTER_SECONDS,
    OpenReservation,
    duration_text,
    left_behind_and_recent,
    open_reservations,
)
from ._party import REASONS, Party, PartySetup, Recipient, Refusal, evaluation_counts, release_node_bound
from ._policy import MICRO, PartyPolicy, load_policy, micro_epsilon
from ._preflight import (
    check_flower_home,
    check_pin_launcher,
    check_python_version,
    check_supernode_files,
    check_trusted_apps,
    parse_node_config,
    preflight_configs,
)
from ._superlink_handshake import (
    EXPIRY_NOTE_DAYS,
    EXPIRY_PROBLEM_HOURS,
    Handshake,
    split_superlink_address,
    superlink_handshake,
    time_left_text,
)

_FLOWER_NAMES = ("handle_evaluate", "handle_query", "handle_train")
"""Names from the Flower message handlers, which import Flower: loaded on first use."""


def __getattr__(name: str):
    if name in _FLOWER_NAMES:
        from . import _flower_handlers

        return getattr(_flower_handlers, name)
    raise AttributeError(f"module 'client' has no attribute {name!r}")


__all__ = [
    "CAP_CHANGES_KEY",
    "CAP_CHANGE_COUNT_KEY",
    "CAP_KEY",
    "COORDINATOR_RECORD",
    "EXPIRY_NOTE_DAYS",
    "EXPIRY_PROBLEM_HOURS",
    "HOLDOUT_SALT_KEY",
    "LEDGER_ID_KEY",
    "MICRO",
    "NOT_DP_COUNT_KEY",
    "NOT_DP_KEY",
    "PARTY_ID_KEY",
    "PER_RECORD_SPEND",
    "REASONS",
    "RELATION_CHANGES_KEY",
    "RELATION_CHANGE_COUNT_KEY",
    "RELATION_KEY",
    "RESERVATION_LEFT_AFTER_SECONDS",
    "AuditRecords",
    "BudgetExhausted",
    "BudgetLedger",
    "BudgetState",
    "Delivery",
    "EntryState",
    "Handshake",
    "LedgerAnchor",
    "LedgerBackup",
    "LedgerBusy",
    "LedgerEntry",
    "LedgerOfAnotherParty",
    "LedgerOfAnotherVersion",
    "LedgerStatus",
    "LedgerTooLarge",
    "OpenReservation",
    "Party",
    "PartyPolicy",
    "PartySetup",
    "Recipient",
    "Refusal",
    "ReleaseParts",
    "anchor_path",
    "backup_ledger",
    "budget_exhausted",
    "carried",
    "check_backup_target",
    "check_flower_home",
    "check_pin_launcher",
    "check_python_version",
    "check_supernode_files",
    "check_trusted_apps",
    "duration_text",
    "evaluation_counts",
    "exact_epsilon",
    "format_epsilon",
    "handle_evaluate",
    "handle_query",
    "handle_train",
    "held_out_rows",
    "left_behind_and_recent",
    "load_policy",
    "micro_epsilon",
    "not_dp_headline",
    "not_dp_replies",
    "open_reservations",
    "parse_node_config",
    "pending_cap_change_text",
    "preflight_configs",
    "read_anchor",
    "read_budget",
    "read_ledger_readonly",
    "read_meta_readonly",
    "read_release_readonly",
    "recorded_cap",
    "release_node_bound",
    "split_superlink_address",
    "superlink_handshake",
    "time_left_text",
    "total_spent",
    "trail_lines",
    "whole_trail",
]
