"""The federation's guarantee, computed from what each party spent for this run.

A party spends its release ε on its training rows and, when it serves the
noised evaluation, the evaluation ε on its held-out rows; its ledger charges
both (sequential composition: the conservative total).  The per-record total
printed here is the largest such sum over the parties whose trees are in the
model: records are assumed disjoint across parties (parallel composition).  It
is per record (row), not per person: a person with several rows, at one party
or at several, is protected at the sum of what their rows face.  Whatever makes a part not DP (a research seed, a research
option, a drafted schema, exact held-out metrics that parties may have sent)
is named, and the text then starts with NOT differentially private.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from edprf_core import DPForest
from edprf_core.count_text import count_text
from edprf_core.forest import large_epsilon_note
from protocol import RefusalReason

from ._marginals_text import marginals_guarantee

__all__ = ["PRE_RESERVATION_REFUSALS", "PartySpend", "federation_guarantee"]

PRE_RESERVATION_REFUSALS: frozenset[RefusalReason] = frozenset(
    {
        RefusalReason.BAD_REQUEST,
        RefusalReason.BAD_MODEL,
        RefusalReason.PARTY_SETUP,
        # not invalid_local_data: a data file that breaks during the read is refused so after the reservation (its
        # epsilon spent, docs/privacy.md); counted as a reply that may have spent (failure-injection review F5)
        RefusalReason.NOT_REGISTERED,
        RefusalReason.BUDGET_EXHAUSTED,
        RefusalReason.ROUND_CLOSED,
        RefusalReason.SCHEMA_MISMATCH,
        RefusalReason.EPSILON_RESOLUTION,
        RefusalReason.HELD_OUT_CHANGED,
        RefusalReason.POLICY_BINS,
        RefusalReason.POLICY_DEPTH,
        RefusalReason.POLICY_EPSILON,
        RefusalReason.POLICY_EVALUATION_EPSILON,
        RefusalReason.POLICY_EXACT_METRICS,
        RefusalReason.POLICY_MARGINALS,
        RefusalReason.POLICY_MIN_EPSILON,
        RefusalReason.POLICY_MODEL_BYTES,
        RefusalReason.POLICY_MODEL_NODES,
        RefusalReason.POLICY_MODEL_PARTS,
        RefusalReason.POLICY_MODEL_SCHEMA,
        RefusalReason.POLICY_MODEL_TREES,
        RefusalReason.POLICY_MODEL_WORK,
        RefusalReason.POLICY_RELATION,
        RefusalReason.POLICY_RELEASE_NODES,
        RefusalReason.POLICY_SEED,
        RefusalReason.POLICY_TREES,
        RefusalReason.REQUEST_ID_REUSED,
    }
)
"""Refusals a party decides before it reserves ε: nothing was charged for them."""

_CHARGED = (
    "These are the epsilons of the releases the coordinator accepted and of the evaluations it asked for, each "
    "charged to its party's ledger before the party replied (the coordinator reads no ledger)"
)


@dataclass(frozen=True)
class PartySpend:
    """What one accepted party spent for this run, as the coordinator saw it."""

    party: str
    release_epsilon: float
    evaluation_epsilon: float = 0.0
    _: KW_ONLY
    exact_metrics: bool = False
    """True when the party may have sent un-noised held-out counts (exact metrics: not DP)."""
    seeded_evaluation: bool = False
    """True when the party may have noised its held-out counts with the run's seed (not DP)."""
    release_charged_before: bool = False  # a release resent for a reused request-tag: an earlier run charged it

    @property
    def new(self) -> float:
        """What this run newly charged to the party's ledger."""
        return self.evaluation_epsilon + (0.0 if self.release_charged_before else self.release_epsilon)

    @property
    def total(self) -> float:
        return self.release_epsilon + self.evaluation_epsilon


def _evaluation_overlap(forest: DPForest, evaluated: list[PartySpend]) -> str:
    """What one record faces of a release and an evaluation on disjoint rows, under the model's relation."""
    if not evaluated:
        return f"{_CHARGED}."
    if all(params.relation == "add-remove" for _, params, _ in forest.parts):
        return (
            "The held-out rows a party evaluates on are disjoint from its training rows (a keyed hash of each "
            "row's own cells), so under add-remove a record actually faces at most max(release, evaluation); "
            f"the total is the bound a ledger charges. {_CHARGED}."
        )
    return (
        "Under replace-one a record swapped for another can leave the training rows while its replacement "
        f"joins the held-out rows, so the total (release + evaluation) is the bound; it is what a ledger charges. "
        f"{_CHARGED}."
    )


def _named(parties: list[str]) -> str:
    """The first five party names, then ``...`` if there are more."""
    return f"{', '.join(parties[:5])}{', ...' if len(parties) > 5 else ''}"


def federation_guarantee(forest: DPForest, spends: list[PartySpend], not_selected: int = 0, flagged: int = 0) -> str:
    """The run's privacy statement: per-record total from the spends, then the model's own statement.

    ``spends``: the parties whose trees are in the model; ``not_selected`` and ``flagged``: how many more
    released (and spent their release ε, as much as the others) but were left out, by selective aggregation or
    as flagged low quality (``exclude-flagged``).
    """
    if not spends:
        return forest.guarantee()
    top = max(spends, key=lambda s: s.total)
    evaluated = [s for s in spends if s.evaluation_epsilon > 0]
    resumed = [s for s in spends if s.release_charged_before]
    scope = "this model" if resumed else "this run"
    spent = (
        f"Spent for {scope}: epsilon = {top.total:g} per record at most (release "
        f"{top.release_epsilon:g}"
        + (f" + noised evaluation {top.evaluation_epsilon:g}" if evaluated else "")
        + (f", the largest total over {len(spends)} parties" if len(spends) > 1 else ", its one party's total")
        + (f"; {len(evaluated)} of them served the evaluation, charged to their ledgers" if evaluated else "")
        + "). "
        + _evaluation_overlap(forest, evaluated)
    )
    if not_selected or flagged:
        how = [
            *([f"{flagged} flagged as low quality"] if flagged and not_selected else []),
            *([f"{not_selected} by selective aggregation"] if flagged and not_selected else []),
        ]
        why = (
            f"left out ({', '.join(how)})"
            if how
            else ("left out by selective aggregation" if not_selected else "left out as flagged low quality")
        )
        spent += (
            f" {count_text(not_selected + flagged, 'more party', 'more parties')} released and spent their release "
            f"epsilon in this run, their trees {why}: the parties kept were chosen on the coordinator's own "
            "validation rows (post-processing of the releases, not DP with respect to those rows)."
        )
    if resumed:
        spent += (
            f" Newly charged by this run: epsilon = {max(s.new for s in spends):g} per party at most; the "
            f"releases of {len(resumed)} of the {len(spends)} parties were resent for a reused request-tag "
            "and were charged by the run that made them."
        )
    reasons = list(forest.not_dp_reasons())  # a copy: the run's reasons are added below
    exact = [s.party for s in spends if s.exact_metrics]
    if exact:
        reasons.append(
            f"{len(exact)} of {len(spends)} parties were asked for exact (un-noised) held-out "
            f"metrics and may have sent them ({_named(exact)}): exact counts of their held-out rows are not "
            "protected"
        )
    seeded = [s.party for s in spends if s.seeded_evaluation]
    if seeded:
        reasons.append(
            f"{len(seeded)} of {len(spends)} parties were asked to noise their held-out counts with the run's "
            f"seed ({_named(seeded)}): whoever knows the seed can remove that noise"
        )
    head = f"NOT differentially private: {'; '.join(reasons)}. " if reasons else ""
    marginals = marginals_guarantee(forest)
    spent += f" {marginals}" if marginals else ""
    if reasons:  # the model's own reasons are in the headline already: stated once
        return f"{head}{spent}\n{forest.guarantee(reasons_above=True)}"  # the model's statement has the note
    large = large_epsilon_note(top.total)  # about what was spent, release and evaluation, not the release alone
    return f"{spent} {forest.guarantee(large_epsilon=False)}" + (f" Note: {large}." if large else "")
