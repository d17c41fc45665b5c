"""A party's side of the federation, independent of Flower's message types.

Privacy argument of one party
-----------------------------
Every reply depends on the party's data only through:
- a release: an eDPRF forest whose ε is reserved in the ledger before
  training (ε-DP per record, see :mod:`edprf_core`); when the request asks
  for a marginals part, a random share of the rows (row by row, by randomness
  independent of the data and never released) releases noisy one-way histograms instead of feeding the trees: the
  two parts spend the same ε on disjoint rows (parallel composition), so the
  ledger's one charge of ε covers both;
- noised evaluation counts: ``correct`` and ``total`` are sums of per-record
  terms over the held-out rows (a record's label is encoded with the schema
  and compared with the forest's predicted class index), so each changes by at
  most 1 under add/remove: L1 sensitivity 2.  They are released as integers
  with exact discrete Laplace noise of scale 2/ε (OpenDP), ε reserved in the
  ledger first; the seeded numpy sampler is used only for a seeded request
  under a policy that allows seeded randomness (research, marked in the reply);
- exact metrics, only when the party's policy says so explicitly (not DP);
- refusals: a reason code from the fixed set :data:`REASONS`, with a message
  that names a policy rule, the requested value, the ledger's state or the
  party's public schema, never anything read from the data file.  Every other
  failure, of any exception type, replies ``internal_error`` (or
  ``party_setup``) with a constant text; the detail stays in the party's log.
  Rows that break a schema rule are dropped locally, one by one (a stable
  transformation), and reported only in the party's own log.
Every check that can refuse a request (policy, ε minimum and resolution,
release size from public parameters, the evaluation model's size, trees,
nodes and schema fingerprint, the party's own configuration) runs before the
ledger reservation, so a refusal never burns ε, and none depends on the data.
The ledger sums every reservation exactly (sequential composition over
requests); a request that would pass the lifetime cap is refused before any
computation.
"""

from __future__ import annotations

import hashlib
import logging
import math
import sqlite3
import stat
import warnings
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from edprf_core import (
    DataValidationError,
    DPForest,
    EDPRFError,
    EDPRFWarning,
    Schema,
    SeededNoiseWarning,
    load_schema,
)
from edprf_core.config_checks import refuse_unknown_keys
from edprf_core.count_text import count_text
from edprf_core.encoding import FeatureGrid, encode_labels, labels_read_by_caller
from edprf_core.forest import MAX_FIT_NODES, MAX_FIT_ROWS, max_tree_nodes
from edprf_core.mechanisms import discrete_laplace_counts, load_exact_samplers
from edprf_core.schema import DraftedSchemaWarning
from protocol import (
    REFUSAL_REASONS,
    InvalidRelease,
    Reason,
    RefusalReason,
    ReleasePolicy,
    bind_to_run,
    check_request_id,
    encode_release,
    load_global_model,
    load_private_key,
    peek_global_model,
    recorded_spend,
    registration_problem,
    request_release_bytes,
    signed_by,
)
from protocol.messages import EvaluateRequest, TrainRequest

from ._disk_space import ledger_room_problem, low_disk_text, read_only_text
from ._evaluation_cost import evaluation_cost
from ._held_out_record import (
    HOLDOUT_SALT_KEY,
    HOLDOUT_SPLIT,
    HOLDOUT_SPLIT_KEY,
    held_out_fraction,
    held_out_split,
    recorded_fraction,
)
from ._ledger import (
    COORDINATOR_RECORD,
    BudgetExhausted,
    BudgetLedger,
    EntryState,
    ReleaseParts,
    RequestIdTaken,
    error_line,
    exact_epsilon,
    format_epsilon,
)
from ._local_data import LocalData, data_file_problem, load_local_data, new_salt
from ._policy import PartyPolicy, load_policy, micro_epsilon
from ._reply_timing import HOLD_MARGIN_SECONDS, message_reached

__all__ = [
    "REASONS",
    "STOPPING",
    "Party",
    "PartySetup",
    "Recipient",
    "Refusal",
    "evaluation_counts",
    "registered_digest",
    "release_node_bound",
    "release_parts",
]

log = logging.getLogger("edprf.party")

_SAMPLERS_TEXT = "the party cannot load its exact samplers (OpenDP); nothing was spent; details are in its log"
_LEDGER_DISK_TEXT = "the party cannot keep its ledger's records now; nothing was spent; details are in its log"
"""The constant text of a ``party_setup`` refusal for a ledger disk that is full or a ledger directory that cannot
be written (:meth:`Party._refuse_a_ledger_that_cannot_be_kept`)."""
_INVALID_LOCAL_DATA_TEXT = "the party's local data file cannot be used with the schema; details are in the party's log"
"""The constant text of ``invalid_local_data``."""

_REQUEST_SPENT_TEXT = (
    "the request was started before and did not complete (it failed, was interrupted, or runs in another process of "
    "this party): its epsilon stays spent; a new request needs a new id"
)
"""The constant text of ``request_spent`` (the party's log says which case it was)."""
_OTHER_RECIPIENT_TEXT = (
    "this request id's release went to a coordinator with other registered keys, and is resent only to that one; a "
    "new request needs a new id"
)
"""The constant text of ``request_id_reused`` for a stored release asked for by a coordinator whose registered keys
differ from its first recipient's (review rev-dpo D3: request ids are the coordinator's tags, not namespaced)."""

STOPPING = (KeyboardInterrupt, SystemExit, GeneratorExit)
"""Exceptions that stop the process: never turned into a reply (the ledger still records the failure)."""

REASONS = REFUSAL_REASONS
"""Every reason code a party may send, with its meaning (:data:`protocol.REFUSAL_REASONS`)."""

_MAX_MODEL_SCHEMA_BYTES = 1 << 16
"""Floor of the accepted size of a model's embedded schema text (4 x the party's own, or this)."""


class Refusal(EDPRFError):
    """A request the party will not serve; ``reason`` is a code from :data:`REASONS`.

    The message travels to the coordinator: it may name a policy rule, a requested value,
    the ledger's state or the public schema, never anything read from the data file.
    """

    def __init__(self, reason: RefusalReason | str, message: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"refusal reason: expected one of {sorted(map(str, REASONS))}, got {reason!r}")
        super().__init__(message)
        self.reason = RefusalReason(reason)


def release_node_bound(schema: Schema, n_trees: int, max_depth: int, split_mode: str, n_bins: int) -> int:
    """Largest node count of a release with these public parameters.

    Binary trees have at most ``2**(depth+1) - 1`` nodes.  A multiway node has one child per
    code of its feature and a path uses each feature once, so layer ``d`` has at most the
    product of the ``d`` largest code counts of the grid (:func:`edprf_core.forest.max_tree_nodes`).
    Computed from the schema and the request alone (no data, no privacy cost), in exact integers.
    """
    codes = () if split_mode == "binary" else FeatureGrid.from_schema(schema, n_bins).n_codes  # binary: no grid
    return n_trees * max_tree_nodes(codes, split_mode, max_depth)


def release_parts(request_id: str, epsilon: Fraction, forest: DPForest) -> ReleaseParts:
    """What the ε of a party's release paid for, read from the release itself (review rev-dpo D8).

    ``forest`` is the release's forest (one part: the party's; what :func:`protocol.encode_release` encodes, and
    ``edprf inspect`` prints back from the bytes): its parameters' ``count_epsilon`` (the DP row count's ε) and
    ``max_depth`` (the depth used, the rule's choice when the request left it to it), and its marginals part and
    residual pass where present.  ``epsilon`` is the ledger entry's exact ε: the model's part is that less the
    count's, so ``count + trees`` is the entry's ε exactly; the marginals part spends the model's part on its own
    rows (parallel composition), its residual pass (never in a party's release) the rest of it.

    Privacy cost: none.  Every value is a public parameter or a DP output inside the release; no row is read.

    Raises
    ------
    ValueError
        The release's ε is not ``epsilon`` (not the entry's release), or it has more than one part.
    """
    if len(forest.parts) != 1:
        raise ValueError(f"release parts: expected a party's release of one part, got {len(forest.parts)}")
    params = forest.parts[0][1]
    if exact_epsilon(params.epsilon) != epsilon:
        raise ValueError(
            f"release parts: the release's epsilon {params.epsilon:g} is not the entry's {format_epsilon(epsilon)}"
        )
    count = exact_epsilon(params.count_epsilon) if params.count_epsilon > 0 else Fraction(0)
    trees = epsilon - count
    marginals = residual = None
    if forest.marginals is not None:
        extra = forest.marginals.residual_pass
        residual = None if extra is None else exact_epsilon(extra.epsilon)
        marginals = trees - (residual or Fraction(0))
    return ReleaseParts(request_id, count, trees, marginals, residual, int(params.max_depth))


def evaluation_counts(forest: DPForest, X: pd.DataFrame, y: pd.Series) -> tuple[int, int]:
    """``(correct, total)`` over rows ``X, y``: sums of per-record terms.

    Each label is encoded to its declared class index with the forest's schema and compared
    with the forest's predicted class index.  Adding or removing one record changes each
    count by at most 1 (L1 sensitivity 2).  Every label must be a declared class (the local
    data filter drops the others, row by row); anything else raises DataValidationError.
    """
    total = len(y)
    if total == 0:
        return 0, 0
    labels = encode_labels(y, forest.schema)
    predicted = np.argmax(forest.predict_proba(X), axis=1)  # what forest.predict returns, as class indices
    return int(np.count_nonzero(predicted == labels)), int(total)


NODE_CONFIG_KEYS = (
    "data-path",
    "schema-path",
    "policy-path",
    "ledger-path",
    "signing-key",
    "data-separator",
    "data-header",
)
"""The keys of a deployed party's node config (``signing-key``, ``data-separator`` and ``data-header`` optional); any
other key is refused."""


def _node_config_flag(key: str, value: Any) -> bool:
    """A node config's boolean: TOML's ``true``/``false`` (``data-header=false``) or the same words quoted.

    Parameters
    ----------
    key : str
        The node config key, for the message.
    value : Any
        Its value as Flower parsed it.

    Returns
    -------
    bool
        The value as a boolean.

    Raises
    ------
    ValueError
        For anything else (``1``, ``'no'``, ``'False'``): a misspelt value must not silently read the file
        another way.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    raise ValueError(f"node config {key}: expected true or false, got {value!r}")


@dataclass(frozen=True)
class PartySetup:
    """Where a party's files are (all local paths)."""

    data_path: Path
    schema_path: Path
    policy_path: Path
    ledger_path: Path
    signing_key_path: Path | None = None
    data_separator: str = ","
    """The data file's field separator (one character; ``;`` for many European exports, a tab)."""
    data_header: bool = True
    """Whether the data file's first line names its columns; without one they are the schema's features in order,
    then the label (UCI's ``processed.cleveland.data``)."""
    simulated: bool = False
    """A simulated party (the run config's ``sim-dir``): its fit's seeded-noise warning is logged at DEBUG, since
    every simulated party would say the same line and the run's guarantee states it once for all of them."""

    def __post_init__(self) -> None:
        sep = self.data_separator
        if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
            raise ValueError(
                f"node config data-separator: expected one character other than a quote or a line break, got {sep!r}"
            )
        if self.data_header is not True and self.data_header is not False:  # a quoted "false" would read as true
            raise ValueError(f"node config data-header: expected true or false, got {self.data_header!r}")

    @classmethod
    def from_configs(cls, node_config: Mapping[str, Any], run_config: Mapping[str, Any]) -> PartySetup:
        """Deployment: node config keys ``data-path``, ``schema-path``, ``policy-path``,
        ``ledger-path`` and optionally ``signing-key``, ``data-separator`` and ``data-header`` (``true`` or
        ``false``).  Simulation: the run config's ``sim-dir`` and the node's ``partition-id`` locate
        ``party-NNNN/`` (its ``data.csv`` has a header).
        """
        if "data-path" in node_config:
            # a misspelt key (signing-kye) must not silently change the party: refused, as in every config
            refuse_unknown_keys(node_config, NODE_CONFIG_KEYS, "node config")
            missing = [k for k in ("schema-path", "policy-path", "ledger-path") if k not in node_config]
            if missing:
                raise ValueError(
                    f"node config: missing keys {missing} (is every pair written key='value', with no space around "
                    "'=' (Flower drops 'key = value' without a word), and every quote closed? an open quote takes in "
                    "the keys after it)"
                )
            key = node_config.get("signing-key") or None
            return cls(
                Path(str(node_config["data-path"])),
                Path(str(node_config["schema-path"])),
                Path(str(node_config["policy-path"])),
                Path(str(node_config["ledger-path"])),
                Path(str(key)) if key else None,
                _node_config_separator(node_config.get("data-separator", ",")),
                _node_config_flag("data-header", node_config.get("data-header", True)),
            )
        sim_dir = run_config.get("sim-dir")
        if not sim_dir or "partition-id" not in node_config:
            raise ValueError(
                "node config needs data-path/schema-path/policy-path/ledger-path "
                "(deployment; each written key='value', with no space around '=') or the run config sim-dir with a "
                "partition-id (simulation)"
            )
        party_dir = Path(str(sim_dir)) / f"party-{int(node_config['partition-id']):04d}"
        key = party_dir / "signing-key.pem"
        return cls(
            party_dir / "data.csv",
            Path(str(sim_dir)) / "schema.toml",
            party_dir / "policy.toml",
            party_dir / "ledger.sqlite",
            key if key.is_file() else None,
            simulated=True,
        )


TAB_SEPARATOR_NAMES = ("\\t", "tab")
"""What the node config's ``data-separator`` reads as a tab besides the tab character itself: backslash and t
(``data-separator='\\t'``: a single-quoted TOML string keeps the backslash) and the word ``tab`` (any case), as
the command line's ``--sep`` does."""


def _node_config_separator(value: Any) -> Any:
    """The node config's ``data-separator`` with a tab's names read as a tab (anything else as given: checked by
    :class:`PartySetup`)."""
    if isinstance(value, str) and (value == TAB_SEPARATOR_NAMES[0] or value.casefold() == TAB_SEPARATOR_NAMES[1]):
        return "\t"
    return value


@dataclass(frozen=True)
class Recipient:
    """What a party knows of whom a message came from, for its ledger's deliveries (review rev-dpo D3).

    ``node_id``: the id the SuperLink gave this SuperNode when it registered (Flower's ``Context.node_id``): a
    random 64-bit number per registration, so another SuperLink (another coordinator) gives another, while a
    SuperNode registered anew at the same SuperLink may get another too.  ``app``: the installed app's FAB hash
    prefix, when the ClientApp runs from a FAB Flower installed (the coordinator's choice of code; ``""`` in a
    simulation or a run from a source directory).  The request's own ids and its registered parties' digest are
    added per request (:meth:`Party.train`).  None of it is data; none of it leaves the party again.
    """

    node_id: str = ""
    app: str = ""


def registered_digest(text: str) -> str:
    """The first 16 hex digits of SHA-256 over a request's ``registered-parties`` list (``""`` for an empty list):
    the coordinator's set of registered keys, as one short value a delivery keeps."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text else ""


class Party:
    """Serves train and evaluate requests under the party's policy and ledger."""

    def __init__(self, setup: PartySetup, reserve_by: float | None = None, recipient: Recipient | None = None) -> None:
        self.setup = setup
        self.recipient = recipient or Recipient()
        """What the party knows of whoever sent this message (:class:`Recipient`): kept with each delivery."""
        self.reserve_by = reserve_by
        """A :func:`client._reply_timing.message_reached` reading after which no epsilon is reserved
        (``round_closed``), or None."""
        self.hold_from: float | None = None
        """A :func:`client._reply_timing.message_reached` reading taken when an evaluation has checked and decoded the
        coordinator's model, before anything of the data file is read (its header or Parquet footer included), or
        None (train, refusals of the model): the reply's hold counts from it, so the decoding's time, which the
        coordinator chooses through the model's size, cannot push a large party's reply past the hold while a small
        party's stays on time (review rev-coord C1).  Per message: the handlers build a Party for each one
        (:func:`client._flower_handlers._party`)."""
        self.policy: PartyPolicy = load_policy(setup.policy_path)
        self.schema: Schema = load_schema(setup.schema_path)
        if self.policy.schema_fingerprint and self.policy.schema_fingerprint != self.schema.fingerprint:
            raise ValueError(
                f"local schema fingerprint {self.schema.fingerprint} differs from the policy's "
                f"{self.policy.schema_fingerprint}"
            )
        if self.schema.is_draft and not self.schema.drafted:
            # marks left without the flag: the fingerprint is the declared schema's, so the coordinator would call
            # the release DP while its bounds may be the data's (rev-s57b N3): nothing is served until it is settled
            raise ValueError(
                f"schema {setup.schema_path}: {self.schema.draft_note}: replace those bounds and lists with public "
                "knowledge and say in each source where they came from, or restore the line drafted = true"
            )
        if setup.signing_key_path is not None:
            _check_key_file(setup.signing_key_path)
        try:
            self.ledger = BudgetLedger(
                setup.ledger_path, self.policy.lifetime_epsilon_cap, self.policy.party_id, relation=self.policy.relation
            )
        except (OSError, sqlite3.Error) as exc:
            full = read_only_text(setup.ledger_path) or low_disk_text(setup.ledger_path)
            raise ValueError(
                f"ledger {setup.ledger_path} cannot be opened for writing: {exc}" + (f"; {full}" if full else "")
            ) from None

    # ---------------------------------------------------------------- helpers
    def _data(self) -> LocalData:
        """The party's rows, split: training rows at or above the policy's holdout-fraction, held-out rows below the
        smallest fraction any release of this ledger trained under (so no release of it ever trained on a held-out
        row, whatever a model says of its releases: :func:`client._held_out_record.held_out_fraction`)."""
        salt = self.ledger.secret(HOLDOUT_SALT_KEY, new_salt)
        fraction = self.policy.holdout_fraction
        held_below = held_out_fraction(fraction, self.ledger.meta_values(f"{HOLDOUT_SPLIT_KEY}/").values())
        if held_below < fraction:  # the party's own log: the operator sees the share actually held out
            log.warning(
                "holding out the rows below %g, the smallest holdout-fraction an earlier release trained under "
                "(the policy says %g; the rows between serve neither side)%s",
                held_below,
                fraction,
                ": no row is held out, and a noised evaluation counts none" if held_below <= 0 else "",
            )
        try:
            return load_local_data(
                self.setup.data_path,
                self.schema,
                held_below,
                salt,
                sep=self.setup.data_separator,
                header=self.setup.data_header,
                train_from=fraction,
            )
        except (DataValidationError, ValueError) as exc:
            # only file-level problems get here (no file, missing or unknown columns); row-level
            # problems, down to no usable row at all, are handled in load_local_data, never reported
            log.error("local data cannot be used: %s", exc)
            raise Refusal(RefusalReason.INVALID_LOCAL_DATA, _INVALID_LOCAL_DATA_TEXT) from None

    def _check_epsilon(self, epsilon: float, what: str) -> None:
        """Minimum and resolution of a requested ε: checked before anything else."""
        if not epsilon >= self.policy.min_epsilon:
            raise Refusal(
                RefusalReason.POLICY_MIN_EPSILON,
                f"{what} epsilon {epsilon!r} is below the party's minimum {self.policy.min_epsilon!r}",
            )
        if micro_epsilon(epsilon) is None:
            raise Refusal(
                RefusalReason.EPSILON_RESOLUTION,
                f"{what} epsilon {epsilon!r} is not a multiple of 1e-6 (the ledger accounts in micro-epsilon)",
            )

    def _check_train(self, req: TrainRequest) -> None:
        p = self.policy
        self._check_epsilon(req.epsilon, "release")
        if req.schema_fingerprint != self.schema.fingerprint:
            raise Refusal(
                RefusalReason.SCHEMA_MISMATCH,
                f"request schema {req.schema_fingerprint} differs from the party's {self.schema.fingerprint}",
            )
        if req.epsilon > p.max_release_epsilon:
            raise Refusal(
                RefusalReason.POLICY_EPSILON,
                f"epsilon {req.epsilon:g} exceeds the party's maximum per release {p.max_release_epsilon:g}",
            )
        if req.max_depth > p.max_depth:
            raise Refusal(
                RefusalReason.POLICY_DEPTH, f"depth {req.max_depth} exceeds the party's maximum {p.max_depth}"
            )
        if req.n_trees > p.max_n_trees:
            raise Refusal(RefusalReason.POLICY_TREES, f"{req.n_trees} trees exceed the party's maximum {p.max_n_trees}")
        if req.n_bins > p.max_n_bins:
            raise Refusal(RefusalReason.POLICY_BINS, f"{req.n_bins} bins exceed the party's maximum {p.max_n_bins}")
        if req.marginals_share > 0 and not p.allow_marginals:
            raise Refusal(
                RefusalReason.POLICY_MARGINALS,
                f"a marginals part on {req.marginals_share:g} of the rows was requested but the party's policy "
                "releases trees only (allow-marginals = false)",
            )
        if req.marginals_bins > p.max_n_bins:
            raise Refusal(
                RefusalReason.POLICY_BINS,
                f"a marginals grid of {req.marginals_bins} bins exceeds the party's maximum {p.max_n_bins}",
            )
        if req.relation != p.relation:
            raise Refusal(
                RefusalReason.POLICY_RELATION, f"relation {req.relation!r} differs from the party's {p.relation!r}"
            )
        if req.seed >= 0 and not p.allow_seeded_randomness:
            raise Refusal(
                RefusalReason.POLICY_SEED,
                "a fixed seed was requested but the party's policy requires cryptographic randomness",
            )
        nodes = release_node_bound(self.schema, req.n_trees, req.max_depth, req.split_mode, req.n_bins)
        # binary trees above what one fit builds: the estimator would refuse them after the reservation
        most = min(p.max_release_nodes, MAX_FIT_NODES) if req.split_mode == "binary" else p.max_release_nodes
        if nodes > most:
            whose = "the party's maximum" if most == p.max_release_nodes else "the most one fit builds"
            raise Refusal(
                RefusalReason.POLICY_RELEASE_NODES,
                f"a release of {req.n_trees} {req.split_mode} trees of depth {req.max_depth} on "
                f"{req.n_bins} bins may hold {nodes} nodes; {whose} is {most}",
            )

    def _seed(self, seed: int) -> np.random.SeedSequence | None:
        """A requested research seed, made party-specific (and so independent of node ids)."""
        if seed < 0:
            return None
        return np.random.SeedSequence([seed, zlib.crc32(self.policy.party_id.encode("utf-8"))])

    def _signing_key(self) -> Any:
        """The party's private key (None when it signs nothing), loaded before any reservation."""
        if self.setup.signing_key_path is None:
            return None
        try:
            return load_private_key(self.setup.signing_key_path)
        except Exception as exc:  # noqa: BLE001 - any failure to load is the party's configuration
            log.error("signing key %s cannot be loaded: %s", self.setup.signing_key_path, exc)
            raise Refusal(
                RefusalReason.PARTY_SETUP, "the party's signing key cannot be loaded; details are in its log"
            ) from None

    def bind(self, release: bytes, run_id: str) -> bytes:
        """This party's signature binding ``release`` to ``run_id`` (empty when it signs nothing).

        Sent next to every release, so that a release resent under a reused request id can
        be told from a copy sent by someone else (:mod:`protocol._binding`).  No privacy cost:
        a signature over released bytes and a public run id.
        """
        try:
            return bind_to_run(release, run_id, self._signing_key())
        except Exception:  # the release is paid for and goes out; without a binding a coordinator
            # accepts it for its own run only
            log.exception("the release could not be bound to run %s", run_id)
            return b""

    # ------------------------------------------------ the reservation and the round's end (train, evaluate)
    def _reserve(self, request_id: str, kind: str, epsilon: float, run_id: str, detail: str) -> None:
        """Reserve ``epsilon`` for ``request_id`` in the ledger, before any row is read, or refuse with nothing
        reserved: ``round_closed`` (:meth:`_refuse_after_the_round`), ``budget_exhausted`` (the cap, decided
        atomically), ``request_spent`` (another process of this party reserved the id first).  The callers refuse
        an unusable data file before (:meth:`_refuse_an_unusable_data_file`).

        Each of these refusals is decided from the clock, the request and the ledger, never after reading the data:
        a refusal that came after the read (as these did, stop 53 and before) cost the coordinator no epsilon and
        told it, by the code or by the reply's time, how long the read took, as often as it asked (red-team review
        F1, F3).  The work after this point (the read, the fit, the counts) is paid for whatever happens to it.
        Privacy cost: ``epsilon``, charged here (the caller's docstring says for what).
        """
        try:
            self._refuse_after_the_round(request_id)
            self.ledger.reserve(request_id, kind, epsilon, run_id=run_id, detail=detail)
        except BudgetExhausted as exc:
            raise Refusal(RefusalReason.BUDGET_EXHAUSTED, str(exc)) from None
        except RequestIdTaken:
            log.info("request %s: another process of this party reserved it first", request_id)
            raise Refusal(RefusalReason.REQUEST_SPENT, _REQUEST_SPENT_TEXT) from None

    def _refuse_a_ledger_that_cannot_be_kept(self, release_bytes: int = 0) -> None:
        """Refuse (``party_setup``) when the ledger cannot take the request's records
        (:func:`client._disk_space.ledger_room_problem`: a read-only file system, a disk without room for
        ``release_bytes`` stored and logged, a directory that takes no new file): the reservation would commit and
        the writes after it fail, spending epsilon on a request that releases nothing (failure-injection review
        rev-ops F2: 1.0 of a 2.0 cap).  Decided from the disk and the request's public parameters alone, before the
        reservation and before any row is read; the readiness answer makes it too.  Privacy cost: none."""
        problem = ledger_room_problem(self.setup.ledger_path, release_bytes)
        if problem is not None:
            log.error("nothing reserved: %s", problem)
            raise Refusal(RefusalReason.PARTY_SETUP, _LEDGER_DISK_TEXT)

    def _refuse_an_unusable_data_file(self) -> None:
        """Refuse (``invalid_local_data``) a data file that cannot be used as a whole: none at the node config's
        data-path, or a header without the schema's columns (:func:`client._local_data.data_file_problem`).  Judged
        from the header line at most, so the verdict and its time do not depend on the rows; before any
        reservation, so a misconfigured party spends nothing.  Privacy cost: none."""
        problem = data_file_problem(
            self.setup.data_path, self.schema, sep=self.setup.data_separator, header=self.setup.data_header
        )
        if problem is not None:
            log.error("local data cannot be used: %s", problem)
            raise Refusal(RefusalReason.INVALID_LOCAL_DATA, _INVALID_LOCAL_DATA_TEXT)

    def _refuse_without_the_samplers(self, seed: int) -> None:
        """Refuse (``party_setup``) when the exact samplers cannot be loaded on this host (OpenDP's library missing, or
        not mapped under a memory limit): found here, before the reservation, instead of at the first draw, after it
        (scale review F3: every request then spent its ε and released nothing).  A seeded research request draws
        from numpy and is not checked.  Decided by the host alone, before any row is read.  Privacy cost: none."""
        if seed >= 0:
            return
        try:
            load_exact_samplers()
        except Exception as exc:  # noqa: BLE001 - OpenDP raises a bare Exception when its library cannot be mapped
            log.error(
                "the exact samplers (OpenDP) cannot be loaded on this host (%s: %s); nothing was spent: is the "
                "process's memory limit too low, or opendp not installed whole?",
                type(exc).__name__,
                exc,
            )
            raise Refusal(RefusalReason.PARTY_SETUP, _SAMPLERS_TEXT) from None

    def _refuse_after_the_round(self, request_id: str) -> None:
        """Refuse (``round_closed``) when :attr:`reserve_by` has passed: the message reached the ClientApp so late
        (the SuperNode's poll, the app's start-up) that the coordinator has stopped waiting, and epsilon reserved
        now would pay for a reply nobody takes.  Called just before the reservation, before any row is read, so
        nothing is spent and the refusal says nothing of the data; a resend under the same id is served afresh.

        The party's clock is enough: it started when the message reached the ClientApp, after the coordinator's.
        A round that closes later, during the read or the work, is not refused: the epsilon is already reserved
        and the reply goes out late (the party's log says to ask for a longer round-timeout).  Privacy cost: none.
        """
        if self._held_reply_misses_the_round():
            log.warning(
                "request %s: the checks of the coordinator's model took so long that its reply, held "
                "reply-after-seconds = %g from their end, would leave less than %g s before the run's round-timeout; "
                "nothing was reserved or read. Ask the coordinator for a longer round-timeout, or lower "
                "max-evaluation-work",
                request_id,
                self.policy.reply_after_seconds,
                HOLD_MARGIN_SECONDS,
            )
            raise Refusal(
                RefusalReason.ROUND_CLOSED,
                "the party's reply, held from the end of its checks of the model, would leave after the round-timeout; "
                "nothing was spent",
            )
        if not self._round_closed():
            return
        log.warning(
            "request %s: the run's round-timeout had passed when the request reached the party; nothing was "
            "reserved or read. Ask the coordinator for a longer round-timeout",
            request_id,
        )
        raise Refusal(
            RefusalReason.ROUND_CLOSED,
            "the round-timeout had passed before the party could reserve its epsilon; nothing was spent",
        )

    def _held_reply_misses_the_round(self) -> bool:
        """Whether an evaluation's reply, held :attr:`hold_from` plus the policy's ``reply-after-seconds``, would leave
        within :data:`client._reply_timing.HOLD_MARGIN_SECONDS` of :attr:`reserve_by` (the run's round-timeout on this
        party's clock).  The set-up's check (:func:`client._reply_timing.hold_problem`) covers a hold counted from the
        message; an evaluation's counts from the end of its model checks, whose time the coordinator chooses through
        the model (up to ``max-evaluation-work``), so it is checked again here, before the reservation.  Decided from
        the clock and the policy, before any row is read: it says nothing of the data."""
        hold = self.policy.reply_after_seconds
        if self.reserve_by is None or self.hold_from is None or hold <= 0:
            return False
        return self.hold_from + hold + HOLD_MARGIN_SECONDS > self.reserve_by

    def _round_closed(self) -> bool:
        """Whether :attr:`reserve_by` has passed, on the clock it was read on (:func:`message_reached`)."""
        return self.reserve_by is not None and message_reached() > self.reserve_by

    def _say_if_the_round_closed(self, request_id: str) -> None:
        """After the work: when the run's round-timeout passed during it, the party's log says so (the epsilon is
        spent and the coordinator may no longer take the reply).  Local only; nothing changes in the reply."""
        if self._round_closed():
            log.warning(
                "request %s: the run's round-timeout passed while the party worked; its epsilon is spent and the "
                "coordinator may not take the reply. Ask the coordinator for a longer round-timeout",
                request_id,
            )

    # ------------------------------------------------ a failure after a reservation (train, evaluate)
    def _mark_failed(self, request_id: str, exc: BaseException, what: str = "") -> None:
        """Mark a reservation failed after ``exc`` (``what`` failed, when given: said in the entry's detail with
        the error); its epsilon stays counted either way.

        Best effort (:meth:`client.BudgetLedger.fail_if_possible`): a ledger that cannot be written (locked, disk
        full) must not replace ``exc`` with its own error, a stop with a reply nor the failure being reported with
        another; the entry then stays ``reserved``, counted all the same, and the party's log says so.
        """
        reason = f"{what} ({error_line(exc)})" if what else type(exc).__name__
        self.ledger.fail_if_possible(request_id, reason)

    def _complete(self, request_id: str, payload: bytes | None = None, recipient: str | None = None) -> None:
        """Mark a reservation released (storing ``payload``, and a release's first ``recipient`` in the same
        transaction: :meth:`client.BudgetLedger.complete`); when that write fails (a full disk), the entry is
        marked failed if it can be (review rev-ops F6: it stayed ``reserved``, read as a request still running) and
        the write's error is raised: nothing is released, the epsilon stays spent."""
        try:
            self.ledger.complete(request_id, payload, recipient)
        except BaseException as exc:
            self._mark_failed(
                request_id, exc, "the release could not be stored" if payload else "its end could not be recorded"
            )
            raise

    # ------------------------------------------------------------------ train
    def _refuse_unaffordable(self, kind: str, epsilon: float) -> None:
        """Refuse a request the ledger cannot pay before the data file is read.

        Reading the rows takes time that grows with their number; a refusal decided after the read would let a
        coordinator, once the budget is spent, send requests that cost nothing and time the refusals to follow
        the row count.  Decided from the ledger alone, a refusal's time does not depend on the data.
        """
        try:
            self.ledger.refuse_unaffordable(kind, epsilon)
        except BudgetExhausted as exc:
            raise Refusal(RefusalReason.BUDGET_EXHAUSTED, str(exc)) from None

    def ready(self, req: TrainRequest) -> bool:
        """Whether this party would serve ``req`` now: the checks :meth:`train` makes before it reads a row.

        The coordinator's readiness round asks this of every connected party before any of them trains, so
        that a run some parties would refuse (budget, policy, registration) fails before the others spend.
        Returns True when the party would release, False when it would resend the release it made under
        ``req.request_id`` (nothing to spend); raises the :class:`Refusal` :meth:`train` would raise.  Answers
        are advisory: the train request is checked again, and a ledger can change in between.

        Privacy cost: none.  Decided from the request, the policy, the signing key and the ledger alone: the
        data file is not opened, so the answer and its timing do not depend on the rows.  Like :meth:`train`,
        it counts spend the coordinator's record holds and the ledger lost (``carried-`` entry).
        """
        _key, _detail, stored = self._admit_train(req)
        return stored is None

    def _admit_train(self, req: TrainRequest) -> tuple[Any, str, bytes | None]:
        """Every check of a train request before a row is read: the signing key, the release's detail, and the
        stored release to resend when ``req.request_id`` was served before (None: a new release)."""
        _check_reply_ids(req)
        self._check_train(req)
        key = self._signing_key()  # the reply needs it: a key that cannot be loaded is refused before the reservation
        problem = registration_problem(req.registered_parties, self.policy.party_id, key)
        if problem is not None:  # its release would be rejected: refused before anything is reserved
            raise Refusal(RefusalReason.NOT_REGISTERED, problem)
        recorded = recorded_spend(req.spend_record, self.policy.party_id, key)
        if recorded is not None:  # spend this ledger lost (a host restored from a snapshot) counts again
            self.ledger.carry_recorded(recorded, COORDINATOR_RECORD, run_id=req.run_id, request_id=req.request_id)
        detail = _release_detail(req)
        previous = self.ledger.find(req.request_id)
        if previous is not None:
            entry, payload = previous
            self._refuse_another_recipient(req, entry.run_id)
            # A repeated request id (a coordinator resuming after a crash, or a retry) gets the
            # release already made for it: resending it is post-processing, no new epsilon.
            if (
                entry.kind != "release"
                or entry.epsilon_exact != exact_epsilon(req.epsilon)
                # a failed entry's detail may end in its failure (older ledgers: replaced by it); it pays nothing again
                or (entry.state != EntryState.FAILED and entry.detail != detail)
            ):
                # the reply names the earlier epsilon only (a coordinator keeps 200 characters of it); the log both
                log.info(
                    "request %s was served before as epsilon %s, %s; now asked as epsilon %s, %s",
                    req.request_id,
                    format_epsilon(entry.epsilon_exact),
                    entry.detail or entry.kind,
                    format_epsilon(exact_epsilon(req.epsilon)),
                    detail,
                )
                raise Refusal(
                    RefusalReason.REQUEST_ID_REUSED,
                    f"this request id was served before with other parameters (epsilon "
                    f"{format_epsilon(entry.epsilon_exact)}); a new request needs a new id",
                )
            if entry.state == EntryState.RELEASED and payload is not None:
                return key, detail, payload
            log.info("request %s was started before; its ledger entry is %s", req.request_id, entry.state)
            raise Refusal(  # constant (failed, interrupted or running alike): the party's log says which
                RefusalReason.REQUEST_SPENT, _REQUEST_SPENT_TEXT
            )
        self._refuse_unaffordable("release", req.epsilon)  # before any row is read (see the method)
        self._refuse_without_the_samplers(req.seed)  # the readiness round says it too, before any party spends
        self._refuse_a_ledger_that_cannot_be_kept(request_release_bytes(self.schema, req))  # so does this one
        return key, detail, None

    def _refuse_another_recipient(self, req: TrainRequest, first_run: str) -> None:
        """Refuse a request id served before when the coordinator asking is not the one its release first went to
        (review rev-dpo D3): request ids are tags the coordinator chooses, so another consortium reusing one would
        be sent the stored release.

        The recipient is told by the digest of the registered parties' keys the request carries
        (:func:`registered_digest`), compared with the release's first recipient: the digest kept when the release
        was completed, in the same transaction, in a table that is never pruned (review rev-s65 F1:
        :meth:`client.BudgetLedger.first_recipient`).  Another digest is refused with ``request_id_reused`` and a
        constant text (checked before the parameters, so that coordinator is not told the earlier request's ε
        either).  Not compared: the node id (new at every registration), the app's hash (a coordinator that rebuilt
        its app resumes all the same).  Equal digests pass, the empty one included: runs that register no keys
        (insecure, simulation) resume as before, and the party cannot tell such coordinators apart.  A release
        completed before 0.2.12 gets that record from its ``sent`` row when this version opens the ledger
        (:func:`client._ledger_audit.backfill_recipients`); one whose first delivery row is not ``sent`` gets none:
        that row stands in while it is kept, and one with neither (made before 0.2.11, or whose ``sent`` row was
        never written or whose delivery rows were pruned) is resent as before.
        ``first_run`` (the release's run, from its entry) is for the log only.  Not a DP question: the
        release is a DP output its ε paid for once, and a resend spends nothing; whom it reaches is the party's
        consent (docs/privacy.md).  Decided from the request and the ledger alone, before any row is read.

        Privacy cost: none.
        """
        first = self.ledger.first_recipient(req.request_id)
        if first is None or first == registered_digest(req.registered_parties):
            return
        log.warning(
            "request %s: its release went to a coordinator with registered keys %s (run %s); this one has %s: not "
            "resent (a coordinator reusing another's request-tag?)",
            req.request_id,
            first or "(none)",
            first_run or "-",
            registered_digest(req.registered_parties) or "(none)",
        )
        raise Refusal(RefusalReason.REQUEST_ID_REUSED, _OTHER_RECIPIENT_TEXT)

    def train(self, req: TrainRequest) -> bytes:
        """Serve a release request; returns the (signed) release bytes.

        Privacy cost: ``req.epsilon``, reserved in the ledger before training.
        """
        key, detail, stored = self._admit_train(req)
        if stored is not None:
            log.info("request %s already served; resending the stored release", req.request_id)
            self._record_delivery(req, "resent")
            return stored
        # Reserved before any row is read (red-team review F1, F3): a request that reads the data and is then
        # refused without a charge (the round closed during the read, another process took the request id, the
        # cap reached meanwhile) would be a free, repeatable timing of the read, so of the file's size.  Every
        # refusal before this line is decided from the request, the policy, the key and the ledger alone.
        self._refuse_an_unusable_data_file()  # not in _admit_train: the readiness answer never opens the file
        self._reserve(req.request_id, "release", req.epsilon, req.run_id, detail)
        try:
            data = self._data()
            if len(data.y_train) > MAX_FIT_ROWS:
                # The limit lies past what the party's reader can hold in memory (2**31 rows of text cells are
                # hundreds of GB), so memory fails first and this refusal is unreachable in practice; after the
                # reservation like any failure of the work (its epsilon stays spent).
                log.error("local data: more than %d training rows; a fit accepts at most that many", MAX_FIT_ROWS)
                raise Refusal(RefusalReason.INVALID_LOCAL_DATA, _INVALID_LOCAL_DATA_TEXT)
            # the split this release trains under (an evaluation of a model holding it checks it is still the
            # one), written before the release exists: a failure to write it is a failed request, no reply
            split = held_out_split(self.policy.holdout_fraction)
            self.ledger.secret(f"{HOLDOUT_SPLIT_KEY}/{req.request_id}", lambda: split)
            if req.seed >= 0 or self.schema.is_draft:  # the policy allows a seed (checked above): the ledger keeps
                # the trail, before the release exists (a failure to write it is a failed request: no reply)
                self.ledger.note_not_dp(
                    req.request_id, req.run_id, _SEEDED_RELEASE if req.seed >= 0 else _DRAFTED_SCHEMA_RELEASE
                )
            auto = req.depth_rule == "auto"
            with (
                _warnings_to_the_log(seeded_level=logging.DEBUG if self.setup.simulated else logging.WARNING),
                labels_read_by_caller(),  # the file's labels, read by the schema; no scikit-learn scorer here
            ):
                clf = _estimator_class()(
                    self.schema,
                    epsilon=req.epsilon,
                    n_trees=req.n_trees,
                    max_depth="auto" if auto else req.max_depth,
                    max_depth_cap=req.max_depth,
                    n_rows_public=(self.policy.declared_rows or None) if auto else None,
                    leaf=req.leaf,
                    split_mode=req.split_mode,
                    n_bins=req.n_bins,
                    relation=req.relation,
                    random_state=self._seed(req.seed),
                    # the consortium's share and grid, not the estimator's rule: histograms are summed on one grid
                    marginals_share=req.marginals_share,
                    marginals_bins=req.marginals_bins if req.marginals_bins else "auto",
                ).fit(data.X_train, data.y_train)
            payload = encode_release(
                clf.forest_, self.policy.party_id, signing_key=key, run_id=req.run_id, request_id=req.request_id
            )
        except BaseException as exc:
            self._mark_failed(req.request_id, exc)
            if isinstance(exc, Refusal):  # the data file broke during the read (its own line said how)
                _log_spent_refusal(req.request_id, exc, req.epsilon)
            if isinstance(exc, (*STOPPING, Refusal)):
                raise  # the process is being stopped (no reply), or a refusal after the reservation (ε spent)
            log.exception("training failed after the reservation; its epsilon stays spent")
            raise Refusal(
                RefusalReason.INTERNAL_ERROR, "training failed at the party; details are in the party's log"
            ) from None
        self._complete(req.request_id, payload, registered_digest(req.registered_parties))
        self._record_parts(req, clf.forest_)
        self._say_if_the_round_closed(req.request_id)
        self._record_delivery(req, "sent")
        try:  # the release is stored: a ledger that cannot be read now (locked) costs the log line its figure only
            left = format_epsilon(self.ledger.remaining())
        except (OSError, sqlite3.Error) as exc:
            left = f"unknown: the ledger cannot be read now ({exc})"
        log.info("released %s at epsilon %s (remaining %s)", count_text(req.n_trees, "tree"), req.epsilon, left)
        return payload

    def _record_parts(self, req: TrainRequest, forest: DPForest) -> None:
        """Keep what the completed release's ε paid for (:func:`release_parts`, review rev-dpo D8), best effort: the
        release is stored and its ε spent, so a row that cannot be written (a full disk, a locked ledger) is said
        in the party's log and the release goes out.  Written after the release exists, from its public parameters
        and DP outputs: its time says nothing of the data.  Privacy cost: none (kept locally)."""
        try:
            self.ledger.record_parts(release_parts(req.request_id, exact_epsilon(req.epsilon), forest))
        except (OSError, sqlite3.Error, ValueError) as exc:
            log.error(
                "request %s: the release goes out, but what its epsilon paid for could not be recorded: %s",
                req.request_id,
                exc,
            )

    def _record_delivery(self, req: TrainRequest, how: str) -> None:
        """Keep the release's delivery in the ledger before it is handed to Flower (review rev-dpo D3): ``sent``
        after a new release is stored, ``resent`` for a stored one sent again under its request id.

        A resend whose row cannot be written is refused (``party_setup``, nothing spent, nothing sent): nothing
        leaves without its record.  A new release whose row cannot be written still goes out: its epsilon is spent
        and its ledger entry names the run that made it; the party's log says the row is missing.  The resend guard
        does not need the row: the release's first recipient was kept when it was completed (review rev-s65 F1).
        Decided after the release exists or from the ledger alone (a resend reads no row), so the write's time says
        nothing of the data.  Privacy cost: none (public request parameters, kept locally)."""
        try:
            self.ledger.record_delivery(
                req.request_id,
                req.run_id,
                how,
                node_id=self.recipient.node_id,
                registered=registered_digest(req.registered_parties),
                app=self.recipient.app,
            )
        except (OSError, sqlite3.Error) as exc:
            if how == "sent":
                log.error(
                    "request %s: the release goes out, but its delivery could not be recorded: %s", req.request_id, exc
                )
                return
            log.error("request %s: its resend could not be recorded (%s): not resent", req.request_id, exc)
            raise Refusal(RefusalReason.PARTY_SETUP, _LEDGER_DISK_TEXT) from None

    # --------------------------------------------------------------- evaluate
    def _check_model(self, model: bytes) -> None:
        """Bound the evaluation work from the model's header, before decoding or reserving."""
        p = self.policy
        try:
            header = peek_global_model(model, p.max_evaluation_model_bytes)
        except InvalidRelease as exc:
            if exc.reason is Reason.TOO_LARGE:
                raise Refusal(
                    RefusalReason.POLICY_MODEL_BYTES,
                    f"the global model has {len(model)} bytes; the party's maximum is {p.max_evaluation_model_bytes}",
                ) from None
            log.warning("evaluation model refused: %s", exc)
            raise Refusal(RefusalReason.BAD_MODEL, "the global model is malformed") from None
        if header.fingerprint != self.schema.fingerprint:
            raise Refusal(  # the coordinator knows its model's fingerprints: the party names its own
                RefusalReason.SCHEMA_MISMATCH,
                f"the global model's releases carry another schema fingerprint than the party's "
                f"({self.schema.fingerprint})",
            )
        schema_cap = max(_MAX_MODEL_SCHEMA_BYTES, 4 * len(self.schema.to_toml().encode("utf-8")))
        if header.schema_toml_bytes > schema_cap:
            raise Refusal(
                RefusalReason.POLICY_MODEL_SCHEMA,
                f"the global model's schema text has {header.schema_toml_bytes} "
                f"bytes; the party accepts at most {schema_cap}",
            )
        if header.n_trees > p.max_evaluation_trees:
            raise Refusal(
                RefusalReason.POLICY_MODEL_TREES,
                f"the global model has {header.n_trees} trees; the party's maximum is {p.max_evaluation_trees}",
            )
        if header.n_nodes > p.max_evaluation_nodes:
            raise Refusal(
                RefusalReason.POLICY_MODEL_NODES,
                f"the global model has {header.n_nodes} nodes; the party's maximum is {p.max_evaluation_nodes}",
            )
        if header.n_releases > p.max_evaluation_parts:
            raise Refusal(
                RefusalReason.POLICY_MODEL_PARTS,
                f"the global model has {header.n_releases} releases; the party's max-evaluation-parts is "
                f"{p.max_evaluation_parts}",
            )
        cost = evaluation_cost(header, self.schema, p)
        if cost.work_units > p.max_evaluation_work:
            raise Refusal(
                RefusalReason.POLICY_MODEL_WORK,
                f"evaluating the global model ({header.n_bytes} bytes, {header.n_releases} releases, "
                f"{header.n_trees} trees, {header.n_nodes} nodes) may take {cost.work_units} work units; "
                f"the party's max-evaluation-work is {p.max_evaluation_work}",
            )
        if cost.memory_bytes > p.max_evaluation_memory_bytes:
            raise Refusal(
                RefusalReason.POLICY_MODEL_NODES,
                f"evaluating the global model ({header.n_bytes} bytes, {header.n_releases} releases, "
                f"{header.n_trees} trees, {header.n_nodes} nodes) may take {cost.memory_bytes >> 20} MiB; "
                f"the party's max-evaluation-memory-bytes is {p.max_evaluation_memory_bytes >> 20} MiB",
            )

    def _refuse_a_release_of_another_split(self, releases: Sequence[Any]) -> None:
        """Refuse (before any row is read, nothing reserved) a model holding a release this party's ledger made
        under another held-out rule than today's (an upgrade), or without the fraction recorded (0.2.0 and
        earlier).  Its training rows may now be held out, so the evaluation would not be on held-out rows and a
        record could face the release and the evaluation both, where the guarantee says the larger of the two.
        (A release made under today's rule at another ``holdout-fraction`` is evaluated: the party holds out
        only rows below the smallest fraction its releases recorded, :meth:`_data`.  That protection reads the
        ledger alone; this check reads the model, which a hostile coordinator can relabel.)

        Also refused: a release of its id that this ledger never made but that carries a valid signature by this
        party's key.  The party made it under a ledger it has lost or replaced, whose held-out salt, and so split,
        may not be this one's.  A release of its id that its key did not sign (or any, when it signs nothing) is
        left alone: as far as the party can tell, no row of it trained that release."""
        own = [r for r in releases if r.party_id == self.policy.party_id]
        if not own:
            return
        key = self._signing_key()
        for release in own:
            if self.ledger.find(release.request_id) is None:
                if key is None or not signed_by(release.raw, key):
                    continue
                log.warning(
                    "evaluation refused: the model holds release %s signed by this party's key, which this ledger "
                    "did not make (a lost or replaced ledger?): it may have trained on rows now held out; a new "
                    "release is needed first",
                    release.request_id,
                )
                raise Refusal(
                    RefusalReason.HELD_OUT_CHANGED,
                    "the model holds a release signed by this party that its ledger did not make (a lost or "
                    "replaced ledger): evaluating it here may not be on held-out rows; a new release is needed first",
                )
            recorded = self.ledger.meta_value(f"{HOLDOUT_SPLIT_KEY}/{release.request_id}")
            if recorded_fraction(recorded) is None:  # another rule, or none recorded with its fraction
                log.warning(
                    "evaluation refused: the model holds this party's release %s, trained under the held-out split "
                    "%r, not under today's rule %r (an upgrade re-drew the held-out rows); a new release is needed "
                    "first",
                    release.request_id,
                    recorded,
                    HOLDOUT_SPLIT,
                )
                raise Refusal(
                    RefusalReason.HELD_OUT_CHANGED,
                    "the model holds a release of this party trained under another held-out split (an upgrade): "
                    "its training rows may now be held out; a new release is needed first",
                )

    def evaluate(self, model: bytes, req: EvaluateRequest) -> dict[str, Any]:
        """Evaluate the global model on the held-out rows.

        Returns integer ``correct`` and ``total`` counts (per-record sums, L1 sensitivity 2
        under add/remove) with discrete Laplace noise of scale 2/ε, ``epsilon``, ``exact``
        (0/1) and ``sampler`` ("exact": OpenDP; "numpy": seeded research sampler; "none":
        exact metrics).  Exact metrics only if the request asks and the policy allows.

        Privacy cost: ``req.epsilon`` in [min-epsilon, max-evaluation-epsilon], a multiple
        of 1e-6, reserved in the ledger after every check and before the counts are
        computed; 0 for exact metrics (not DP).
        """
        _check_reply_ids(req)
        p = self.policy
        if req.exact:
            if not p.allow_exact_metrics:
                raise Refusal(RefusalReason.POLICY_EXACT_METRICS, "exact metrics are not allowed by the party's policy")
        else:
            self._check_epsilon(req.epsilon, "evaluation")
            if req.epsilon > p.max_evaluation_epsilon:
                raise Refusal(
                    RefusalReason.POLICY_EVALUATION_EPSILON,
                    f"evaluation epsilon {req.epsilon!r} is above {p.max_evaluation_epsilon!r}, "
                    "the maximum allowed by the party's policy",
                )
        if req.seed >= 0 and not p.allow_seeded_randomness:
            raise Refusal(
                RefusalReason.POLICY_SEED,
                "a fixed seed was requested but the party's policy requires cryptographic randomness",
            )
        self._check_model(model)
        try:
            # each release in it must also fit the party's own release limits (depth, trees, bins)
            limits = ReleasePolicy(
                max_epsilon=math.inf,
                max_depth=p.max_depth,
                max_n_trees=p.max_n_trees,
                max_bytes=p.max_evaluation_model_bytes,
                max_n_bins=p.max_n_bins,
                allowed_relations=(p.relation,),
            )
            view = load_global_model(model, policy=limits, max_bytes=p.max_evaluation_model_bytes, manifest=False)
        except InvalidRelease as exc:
            log.warning("evaluation model refused: %s", exc)
            raise Refusal(RefusalReason.BAD_MODEL, "the global model failed its checks") from None
        forest = view.forest
        if forest.schema.fingerprint != self.schema.fingerprint:
            raise Refusal(RefusalReason.SCHEMA_MISMATCH, "the global model uses another schema")
        self._refuse_a_release_of_another_split(view.releases)
        # the model's checks end here, and nothing above read the data file: the hold counts from now, so that what
        # follows (the file's header or Parquet footer, whose size grows with its row groups, the read, the
        # prediction) is held, and the checks' time, which the coordinator chooses through the model, is not
        self.hold_from = message_reached()
        if not req.exact:
            self._refuse_a_ledger_that_cannot_be_kept()  # before the ledger is read: a full disk fails that read
            if self.ledger.find(req.request_id) is not None:
                # Decided from the ledger alone, before any row is read: the reservation below would refuse it
                # anyway, but only after reading the file, and a coordinator could repeat such a request, at no
                # cost in epsilon, to time how long this party's data takes to read.
                raise Refusal(
                    RefusalReason.REQUEST_ID_REUSED,
                    f"request {req.request_id} is already in this party's ledger; a new evaluation needs a new id",
                )
            self._refuse_unaffordable("evaluation", req.epsilon)  # before any row is read (see the method)
            self._refuse_an_unusable_data_file()
            self._refuse_without_the_samplers(req.seed)
            # reserved before any row is read, as in train (see _reserve: no refusal comes after the read)
            self._reserve(req.request_id, "evaluation", req.epsilon, req.run_id, "noised held-out accuracy")
        try:
            data = self._data()
            if req.exact or req.seed >= 0:  # allowed by the policy (checked above): the ledger keeps the trail
                self.ledger.note_not_dp(req.request_id, req.run_id, _EXACT_METRICS if req.exact else _SEEDED_EVALUATION)
            correct, total = evaluation_counts(forest, data.X_holdout, data.y_holdout)
            if req.exact:
                return {"correct": correct, "total": total, "epsilon": 0.0, "exact": 1, "sampler": "none"}
            rng = np.random.default_rng(self._seed(req.seed)) if req.seed >= 0 else None
            noisy = discrete_laplace_counts(
                np.array([correct, total], dtype=np.int64), req.epsilon, sensitivity=2, rng=rng
            )
        except BaseException as exc:
            if not req.exact:
                self._mark_failed(req.request_id, exc)
                if isinstance(exc, Refusal):
                    _log_spent_refusal(req.request_id, exc, req.epsilon)
            if isinstance(exc, (*STOPPING, Refusal)):
                raise  # the process is being stopped (no reply), or the data file's refusal (ε spent when noised)
            log.exception("evaluation failed after the reservation; its epsilon stays spent")
            raise Refusal(
                RefusalReason.INTERNAL_ERROR, "evaluation failed at the party; details are in the party's log"
            ) from None
        self._complete(req.request_id)
        self._say_if_the_round_closed(req.request_id)
        return {
            "correct": int(noisy[0]),
            "total": int(noisy[1]),
            "epsilon": float(req.epsilon),
            "exact": 0,
            "sampler": "numpy" if rng is not None else "exact",
        }


def _log_spent_refusal(request_id: str, refusal: Refusal, epsilon: float) -> None:
    """The party's line for a refusal made after the request's reservation: unlike the same code before it, this
    one was paid for (review rev-ops F5: the two read alike)."""
    log.error(
        "request %s refused after its reservation (%s): its epsilon %g stays spent (`edprf budget` shows it)",
        request_id,
        refusal.reason,
        epsilon,
    )


@contextmanager
def _warnings_to_the_log(seeded_level: int = logging.WARNING) -> Iterator[None]:
    """The estimator's own warnings during a party's fit (values clipped to the schema's bounds, ...) go to the
    party's log, once each, instead of Python's warning output with a source path; the seeded-noise and
    drafted-schema warnings (not DP: the ledger keeps the trail, the guarantee says it) at ``seeded_level``.  Local only: nothing of them reaches a reply.  Other warnings are shown as Python shows them."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:  # process-wide: a party serves one request at a time
            warnings.simplefilter("default")
            yield
    finally:  # also when the fit fails: the warnings may say why
        for w in caught:
            if issubclass(w.category, (SeededNoiseWarning, DraftedSchemaWarning)):
                log.log(seeded_level, "training: %s", w.message)
            elif issubclass(w.category, EDPRFWarning):
                log.warning("training: %s", w.message)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _check_reply_ids(req: TrainRequest | EvaluateRequest) -> None:
    """The ids a reply and the ledger carry follow the release encoder's rule (checked before any reservation).

    Requests built by :mod:`protocol.messages` already hold to it; this refuses, with ``bad_request``,
    one that was built around those checks.  The message gives no part of the ids.
    """
    try:
        check_request_id(req.request_id, "request-id", required=True)
        check_request_id(req.run_id, "run-id")
    except ValueError as exc:
        raise Refusal(RefusalReason.BAD_REQUEST, f"the request's ids cannot go into a reply: {exc}") from None


def __getattr__(name: str):
    """``EDPRFClassifier`` on first use: scikit-learn loads with training, not with ``edprf party check``."""
    if name == "EDPRFClassifier":
        from edprf_core import EDPRFClassifier

        return EDPRFClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _estimator_class() -> type:
    """The estimator a release is trained with (a module attribute, so tests may wrap it)."""
    return globals().get("EDPRFClassifier") or __getattr__("EDPRFClassifier")


def _check_key_file(path: Path) -> None:
    """The signing key must be a regular file, readable, and not group/world accessible."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ValueError(f"signing key {path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"signing key {path}: expected a regular file")
    if st.st_mode & 0o077:
        raise ValueError(
            f"signing key {path}: expected no group/world permissions (chmod 600), got mode "
            f"{stat.S_IMODE(st.st_mode):o}"
        )
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise ValueError(f"signing key {path}: cannot be read ({exc.strerror})") from None


_SEEDED_RELEASE = "release with the request's seed (its noise is known to whoever knows the seed)"
_SEEDED_EVALUATION = "held-out counts noised with the request's seed (known to whoever knows the seed)"
_EXACT_METRICS = "exact held-out counts (no noise)"
_DRAFTED_SCHEMA_RELEASE = "release on a schema drafted from data (its domains came from the records)"


def _release_detail(req: TrainRequest) -> str:
    """The ledger's description of a release: also what a repeated request id must match."""
    depth = f"depth {req.max_depth}" if req.depth_rule == "fixed" else f"auto depth <= {req.max_depth}"
    marginals = (
        f", marginals {req.marginals_share:g} of the rows on {req.marginals_bins} bins" if req.marginals_share else ""
    )
    return (
        f"{req.n_trees} trees, {depth}, {req.split_mode}, {req.n_bins} bins, {req.relation}"
        + (", leaf counts" if req.leaf == "counts" else "")
        + marginals
    )
