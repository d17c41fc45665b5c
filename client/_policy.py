"""A party's own policy: what it agrees to release, and its lifetime budget."""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import tomli_w

from edprf_core.config_checks import Boolean, Integer, Number, OneOf, check_fields, from_kebab, kebab
from edprf_core.forest import RELATIONS
from protocol import check_party_id

__all__ = ["MICRO", "PartyPolicy", "load_policy", "micro_epsilon"]


@dataclass(frozen=True)
class PartyPolicy:
    """Limits a party enforces on every request, whatever the coordinator asks.

    Parameters
    ----------
    party_id : str
        The party's identifier in releases and signatures: exactly what the release
        encoding accepts (1-64 characters ``[A-Za-z0-9._-]``, starting alphanumeric).
    lifetime_epsilon_cap : float in (0, inf), default 2.0
        Total ε per record (data row) this party will ever spend on its data
        (releases and noised evaluations; sequential composition over
        requests).  A person with k rows is protected at up to k times it.  The ledger file keeps the cap: a
        party has one ledger for every consortium (a second ``ledger-path`` is a second cap).
    max_release_epsilon : float in (0, inf), default 1.0
        Largest ε of one release.
    max_evaluation_epsilon : float in [0, inf), default 0.1
        Largest ε of one noised evaluation; 0 refuses evaluations.
    max_depth : int >= 1, default 8
        Largest ``max_depth`` of a request (a fixed depth, or the cap of an automatic one).  Training
        time and the release's size grow as ``2 ** max_depth``.
    max_n_trees : int >= 1, default 50
        Largest ``n_trees`` of a request.  Trees split the party's rows (parallel composition), so more
        trees do not spend more ε, but each tree sees fewer rows.
    max_n_bins : int >= 2, default 64
        Largest ``n_bins`` of a request.  Memory and time of training grow with it (a request
        for 10,000 bins exhausts gigabytes); 64 matches the coordinator's release policy.
    relation : "add-remove" or "replace-one", default "add-remove"
        The only neighbouring relation this party releases under.  The lifetime cap adds up
        the ε of every request, which is meaningful in one relation only.
    schema_fingerprint : str, default ""
        When set, requests and the local schema must carry this fingerprint.
    allow_exact_metrics : bool, default False
        Reply with un-noised metrics when asked.  Exact metrics are not DP.
    allow_seeded_randomness : bool, default False
        Accept a coordinator-provided seed (reproducible simulation only: a
        known seed lets anyone remove the noise).
    holdout_fraction : float in [0, 1), default 0.2
        Share of local rows kept for evaluation, never trained on.  Each release records it, and the party holds
        out only the rows below the smallest fraction its releases recorded, so that no earlier release trained on
        a row it evaluates on: raising it leaves the rows between the two fractions unused.
    min_epsilon : float in (0, inf), default 0.01
        Smallest ε of a release or a noised evaluation; smaller requests are refused before
        anything else.  Every request ε must also be a multiple of 1e-6 (one micro-ε, the
        ledger's unit).
    max_release_nodes : int >= 1, default 1_000_000
        Largest node count of a requested release, computed from public parameters only
        (trees, depth, split mode, bins, schema; an upper bound for multiway trees, which
        grow as bins**depth).  Refused before any ε is reserved.
    max_evaluation_model_bytes : int >= 1, default 32 MiB
        Largest global model the party will look at for an evaluation.
    max_evaluation_trees : int >= 1, default 5_000
        Largest number of trees in a global model to evaluate (e.g. 50 trees x 100 parties).
    max_evaluation_nodes : int >= 1, default 1_000_000
        Largest number of nodes in a global model to evaluate (e.g. 50 depth-8 binary trees
        from 39 parties).
    max_evaluation_memory_bytes : int >= 1, default 2 GiB
        Largest memory the party lets an evaluation take, estimated from the model's
        header before anything is decoded or reserved (:mod:`client._evaluation_cost`);
        a model whose estimate passes it is refused (``policy_model_nodes``).
    max_evaluation_parts : int >= 1, default 512
        Largest number of releases (parts) in a global model to evaluate.  Each release
        costs milliseconds to decode whatever its size, so many small releases are the
        slow shape inside the byte limit; 512 admits an honest 300-party federation.
        Refused from the header before anything is decoded or reserved
        (``policy_model_parts``).
    max_evaluation_work : int >= 1, default 10_000_000
        Largest decode-and-compile work of an evaluation, in the work units of
        :mod:`client._evaluation_cost` (about one microsecond each on the benchmark
        machine), estimated from the model's header before anything is decoded or
        reserved; above it the model is refused (``policy_model_work``).  Every model
        inside the other default limits passes the default.
    allow_marginals : bool, default True
        Release the marginals part a request asks for (``marginals-share`` above 0): one noisy
        (bin x class) count histogram per feature, from a random share of the rows, next to the
        trees built from the others.  The ε of a release is the same with or without it (the two
        parts hold disjoint rows: parallel composition); false refuses such requests
        (``policy_marginals``) for a party whose governance approved tree structures only.
    declared_rows : int >= 0, default 0
        A training-row count this party declares public (e.g. published in a
        registry).  A request with ``depth-rule = "auto"`` then chooses the
        depth from it at no ε; 0 (not declared) means the depth comes from a
        DP count of the rows, charged within the request's ε.  Declare only a
        number you are willing to publish: it is used as is.
    reply_after_seconds : float in [0, 3600], default 0
        The party replies to a train or evaluate message no earlier than this many seconds
        after the message reached it, so that the reply's time does not tell the size of its
        data (:mod:`client._reply_timing`); work that takes longer replies when done, and the
        party's log says so.  0 replies at once.  A consortium gives every party one value,
        above its parties' longest training and their evaluation of the largest model this policy
        admits (an evaluation's hold counts from the end of its model checks; its prediction grows
        with the held-out rows times ``max_evaluation_trees``), and at least 30 s below the coordinator's
        ``round-timeout`` (a hold that does not fit is refused before anything is spent).
    """

    party_id: str
    lifetime_epsilon_cap: float = 2.0
    max_release_epsilon: float = 1.0
    max_evaluation_epsilon: float = 0.1
    max_depth: int = 8
    max_n_trees: int = 50
    max_n_bins: int = 64
    relation: str = "add-remove"
    schema_fingerprint: str = ""
    allow_exact_metrics: bool = False
    allow_seeded_randomness: bool = False
    holdout_fraction: float = 0.2
    min_epsilon: float = 0.01
    max_release_nodes: int = 1_000_000
    max_evaluation_model_bytes: int = 32 << 20
    max_evaluation_trees: int = 5_000
    max_evaluation_nodes: int = 1_000_000
    max_evaluation_memory_bytes: int = 2 << 30
    max_evaluation_parts: int = 512
    max_evaluation_work: int = 10_000_000
    allow_marginals: bool = True
    declared_rows: int = 0
    reply_after_seconds: float = 0.0

    def __post_init__(self) -> None:
        try:
            check_party_id(self.party_id)
        except ValueError as exc:
            raise ValueError(f"party-id: {exc}") from None
        check_fields(self, _RULES_BEFORE_RESOLUTION)
        if micro_epsilon(self.min_epsilon) is None:
            raise ValueError(f"min-epsilon: expected a multiple of 1e-6, got {self.min_epsilon!r}")
        check_fields(self, _RULES)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> PartyPolicy:
        return cls(**from_kebab(cls, data, what="policy"))

    def to_toml(self) -> str:
        """The policy as TOML with kebab-case keys (what :func:`load_policy` reads)."""
        return tomli_w.dumps({kebab(k): v for k, v in asdict(self).items()})


MAX_REPLY_AFTER_SECONDS = 3600.0
"""Largest ``reply-after-seconds``: an hour (Flower's rounds time out long before)."""

_RULES_BEFORE_RESOLUTION = {
    "lifetime_epsilon_cap": Number(0, low_open=True),
    "max_release_epsilon": Number(0, low_open=True),
    "min_epsilon": Number(0, low_open=True),
    "max_evaluation_epsilon": Number(0),
}
"""Checked first: ``min-epsilon``'s resolution is checked on a positive finite number."""

_RULES = {
    "max_depth": Integer(1),
    "max_n_trees": Integer(1),
    "max_n_bins": Integer(2),
    "max_release_nodes": Integer(1),
    "max_evaluation_model_bytes": Integer(1),
    "max_evaluation_trees": Integer(1),
    "max_evaluation_nodes": Integer(1),
    "max_evaluation_memory_bytes": Integer(1),
    "max_evaluation_parts": Integer(1),
    "max_evaluation_work": Integer(1),
    "declared_rows": Integer(0),
    "relation": OneOf(RELATIONS),
    "holdout_fraction": Number(0, 1, high_open=True),
    "reply_after_seconds": Number(0, MAX_REPLY_AFTER_SECONDS),
    "allow_exact_metrics": Boolean(),
    "allow_seeded_randomness": Boolean(),
    "allow_marginals": Boolean(),
}


MICRO = 10**6
"""Ledger unit: ε is accounted in integer micro-ε; a request ε must be a multiple of 1e-6."""


def micro_epsilon(epsilon: float) -> int | None:
    """``epsilon`` in integer micro-ε units, or None if it is not a positive multiple of 1e-6.

    The value is read as the shortest decimal that round-trips the float (``repr``), so
    ``0.1`` is exactly 100_000 micro-ε; ``5e-324``, ``1e-7`` or ``0.1234567`` are None.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon):
        return None
    exact = Fraction(repr(float(epsilon))) * MICRO
    if exact.denominator != 1 or exact <= 0:
        return None
    return int(exact)


def load_policy(path: str | Path) -> PartyPolicy:
    """Read a party policy TOML file (kebab-case keys, see :class:`PartyPolicy`)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read policy file {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"policy file {p} is not valid TOML: {exc}") from None
    return PartyPolicy.from_mapping(data)
