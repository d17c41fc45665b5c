"""A party's own policy: what it agrees to release, and its lifetime budget."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import tomli_w

from edprf_core import RELATIONS

from ._ledger import epsilon_units

__all__ = ["PartyPolicy", "load_policy"]


@dataclass(frozen=True)
class PartyPolicy:
    """Limits a party enforces on every request, whatever the coordinator asks.

    Parameters
    ----------
    party_id : str
        The party's identifier in releases and signatures.
    lifetime_epsilon_cap : float in (0, inf), default 2.0
        Total ε this party will ever spend on its data (releases and noised
        evaluations; sequential composition over requests).
    max_release_epsilon : float in (0, inf), default 1.0
        Largest ε of one release.
    max_evaluation_epsilon : float in [0, inf), default 0.1
        Largest ε of one noised evaluation; 0 refuses evaluations.
    min_epsilon : float in (0, max-release-epsilon], default 0.01
        Smallest ε of any request (release or evaluation).  Each request costs
        the party work and a ledger entry whatever its ε; a coordinator could
        otherwise buy many cheap evaluations, each still a query on the data.
    max_depth : int >= 1, default 8
    max_trees : int >= 1, default 50
    max_bins : int >= 2, default 64
        Largest ``n_bins`` of a request.  Memory and time of training grow with it (a request
        for 10,000 bins exhausts gigabytes); 64 matches the coordinator's release policy.
    max_evaluation_model_bytes : int >= 1, default 16 MiB
        Largest global model the party agrees to evaluate, checked before decoding it.
    max_evaluation_trees : int >= 1, default 2000
        Largest number of trees in a model to evaluate; each release in it must also respect
        ``max-depth``, ``max-trees`` and ``max-bins``.  Evaluation work grows with trees x rows x depth.
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
        Share of local rows kept for evaluation, never trained on.
    """

    party_id: str
    lifetime_epsilon_cap: float = 2.0
    max_release_epsilon: float = 1.0
    max_evaluation_epsilon: float = 0.1
    min_epsilon: float = 0.01
    max_depth: int = 8
    max_trees: int = 50
    max_bins: int = 64
    max_evaluation_model_bytes: int = 16 * 1024 * 1024
    max_evaluation_trees: int = 2000
    relation: str = "add-remove"
    schema_fingerprint: str = ""
    allow_exact_metrics: bool = False
    allow_seeded_randomness: bool = False
    holdout_fraction: float = 0.2

    def __post_init__(self) -> None:
        if not isinstance(self.party_id, str) or not self.party_id or len(self.party_id) > 128:
            raise ValueError(f"party-id: expected a non-empty string of at most 128 characters, got {self.party_id!r}")
        for name in ("lifetime_epsilon_cap", "max_release_epsilon", "min_epsilon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{_key(name)}: expected a positive finite number, got {v!r}")
        v = self.max_evaluation_epsilon
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"max-evaluation-epsilon: expected a finite number >= 0, got {v!r}")
        if self.min_epsilon > self.max_release_epsilon:
            raise ValueError(f"min-epsilon: expected at most max-release-epsilon ({self.max_release_epsilon:g}), "
                             f"got {self.min_epsilon!r}")
        for name in ("lifetime_epsilon_cap", "max_release_epsilon", "max_evaluation_epsilon", "min_epsilon"):
            try:
                epsilon_units(getattr(self, name), allow_zero=True)
            except ValueError as exc:
                raise ValueError(f"{_key(name)}: {exc}") from None
        for name, low in (("max_depth", 1), ("max_trees", 1), ("max_bins", 2), ("max_evaluation_model_bytes", 1),
                          ("max_evaluation_trees", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{_key(name)}: expected an integer >= {low}, got {v!r}")
        if self.relation not in RELATIONS:
            raise ValueError(f"relation: expected one of {RELATIONS}, got {self.relation!r}")
        if not (isinstance(self.holdout_fraction, (int, float)) and 0 <= self.holdout_fraction < 1):
            raise ValueError(f"holdout-fraction: expected a number in [0, 1), got {self.holdout_fraction!r}")
        for name in ("allow_exact_metrics", "allow_seeded_randomness"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{_key(name)}: expected true or false, got {getattr(self, name)!r}")

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> PartyPolicy:
        known = {_key(f.name): f.name for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"policy: unknown keys {unknown}; allowed: {sorted(known)}")
        return cls(**{known[k]: v for k, v in data.items()})

    def to_toml(self) -> str:
        return tomli_w.dumps({_key(f.name): getattr(self, f.name) for f in fields(self)})


def _key(name: str) -> str:
    return name.replace("_", "-")


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
