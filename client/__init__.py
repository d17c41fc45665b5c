"""The party: local data, policy, budget ledger, and the Flower ClientApp."""

from ._ledger import BudgetExhausted, BudgetLedger, EntryState, LedgerEntry, format_epsilon, read_ledger_readonly
from ._party import REASONS, Party, PartySetup, Refusal, evaluation_counts, release_node_bound
from ._policy import PartyPolicy, load_policy, micro_epsilon

__all__ = [
    "REASONS",
    "BudgetExhausted",
    "BudgetLedger",
    "EntryState",
    "LedgerEntry",
    "Party",
    "PartyPolicy",
    "PartySetup",
    "Refusal",
    "evaluation_counts",
    "format_epsilon",
    "load_policy",
    "micro_epsilon",
    "read_ledger_readonly",
    "release_node_bound",
]
