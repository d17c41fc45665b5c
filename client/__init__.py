"""The party: local data, policy, budget ledger, and the Flower ClientApp."""

from ._ledger import BudgetExhausted, BudgetLedger, LedgerEntry
from ._party import Party, PartySetup, Refusal
from ._policy import PartyPolicy, load_policy

__all__ = ["BudgetExhausted", "BudgetLedger", "LedgerEntry", "Party", "PartyPolicy", "PartySetup", "Refusal",
           "load_policy"]
