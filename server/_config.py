"""The coordinator's run parameters, read from Flower's run config (kebab-case keys)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from edprf_core import Schema
from edprf_core.config_checks import (
    Integer,
    Number,
    OneOf,
    Text,
    check_fields,
    from_kebab,
    kebab_defaults,
    kebab_values,
)
from edprf_core.forest import LEAF_OUTPUTS, MAX_TOLERATED_PARTIES, bounded_influence_parts
from edprf_core.marginals import MARGINALS_BINS_LOW, effective_epsilon, marginals_n_bins, marginals_share_rule
from protocol.messages import DEPTH_REQUESTS

__all__ = ["DEFAULT_RUN_CONFIG", "CoordinatorConfig"]

_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class CoordinatorConfig:
    """Run parameters of one federation (``[tool.flwr.app.config]`` / ``--run-config``).

    epsilon : float in (0, inf)
        ε each party spends on its release (the global forest's ε per record,
        records being disjoint across parties).
    max_depth : int in [1, 30], default 8
        ``depth_rule = "fixed"``: the depth of every tree; ``"auto"``: the
        deepest a party may choose.
    depth_rule : {"auto", "fixed"}, default "auto"
        ``auto``: each party chooses its depth from the row count its policy
        declares public, or from a DP count of its rows charged within
        ``epsilon`` (the release says which), so a big hospital and a small
        clinic each grow what their data support.
    leaf : {"counts", "label"}, default "counts"
        What leaves release: noisy class counts (probabilities, risk scores)
        or the paper's permute-and-flip label (votes).
    n_trees : int >= 1
        Trees every party releases: decided here, never from row counts.
    min_parties : int >= 1
        Fewer valid releases than this: no model is saved.  Fewer connected parties than this after
        ``node_wait_timeout``: the run fails before any request is sent, so no party spends ε on it.  A
        consortium sets 3 or more: the merge bounds one party's say from three releases on
        (``edprf_core.forest.BOUNDED_INFLUENCE_PARTS``; ``2 f + 1`` for ``tolerated_parties = f``); with fewer,
        either party's release can decide the model (the report's ``bounded_influence`` says so).
    expected_parties : int >= 0
        Wait up to ``node_wait_timeout`` seconds for this many connected
        parties before sending requests (0: start once ``min_parties`` are in;
        in simulation, 0 means every party of the ``sim-dir`` workspace).
    validation_data_path : str
        Data the coordinator may use (public, or its own): enables the
        per-party contribution report and quality flags.  Not given to parties.
    selective_aggregation : bool
        Keep only the parties whose trees raise validation accuracy (greedy),
        up to ``target_parties`` (0: no cap), never fewer than ``min_parties`` nor than three.
    exclude_flagged : bool
        Drop parties the quality test flags; when fewer than ``min_parties`` are left, the run fails and saves
        no model.
    evaluation_epsilon : float in [0, inf), default 0.1
        ε of each party's noised held-out metrics; 0 skips the evaluation round.
    evaluation_max_interval_width : float in (0, inf), default 0.1
        Widest 95 % interval of the consortium's held-out accuracy worth
        spending ε on.  Before asking, the coordinator computes the interval
        ``evaluation_epsilon`` would give if every party held
        ``max_party_rows`` held-out rows; wider than this, no request is sent
        and no party spends ε (the report says which ε would do).  1 or more:
        no check.
    max_party_rows : int >= 0, default 0
        Public bound on any party's held-out rows (e.g. the largest published
        size times the holdout share), agreed by the consortium.  It sizes the
        planned interval above, and a reply outside what a party of this size
        can plausibly send (plus 12 noise scales) is refused, so one party
        moves the consortium's estimate by at most its share of the pooled
        rows (``server._consortium_estimate``).  0: not declared, and a noised
        evaluation is skipped unless ``evaluation_max_interval_width >= 1``.
    require_exact_sampling : bool, default True
        Accept only releases drawn by the exact sampler (``sampler = exact``
        in the release): what a production federation requires.  A research
        run with seeded noise (``seed >= 0``, ``edprf simulate --seeded-noise``)
        must turn it off.
    request_tag : str
        Names this training's release requests at the parties (empty: the
        Flower run id, so every run is a new request).  Re-running with the
        same tag, e.g. after the coordinator crashed, makes each party resend
        the release it already made for that tag instead of spending ε again;
        a party refuses a reused tag whose parameters differ.  The evaluation
        round is always a new request (the model may differ), and is skipped
        when every release was resent (see ``evaluate_resumed``).
    overwrite : bool, default False
        Replace the run in ``output_dir``.  Without it a directory that holds a
        report or a model is refused before any request is sent.
    evaluate_resumed : bool, default False
        Run the evaluation round even when every accepted release was resent
        for a reused ``request_tag`` (the model an earlier run built and
        evaluated): otherwise no party spends evaluation ε again.
    schema_path : str
        The federation's public schema (TOML); every release must carry its fingerprint.  Required
        unless ``sim_dir`` is given.
    sim_dir : str
        A simulation workspace (``edprf simulate --prepare-only``): its schema, test and validation files
        stand in for the paths not given.  Simulation only.
    output_dir : str, default "edprf-output"
        Where the global model (with its manifest) and ``report.json`` are written.
    split_mode : {"binary", "multiway"}, default "binary"
        Splits on (feature, threshold) pairs of the public grid, or one child per bin or category.
    n_bins : int >= 2, default 20
        Bins of every continuous feature on the public grid, the same for every party: trees must share
        one grid to merge.  Above 64 a party's policy must allow it (its ``max_n_bins``, 64 by default).
    relation : {"add-remove", "replace-one"}, default "add-remove"
        The neighbouring relation the releases are requested under; a party refuses any other than its
        policy's.
    seed : int, default -1
        -1: no seed, production randomness.  A seed >= 0 is sent to the parties for reproducible research
        runs: a party refuses it unless its policy allows seeded randomness, and the releases and the
        guarantee say NOT differentially private (``require_exact_sampling`` must be off).
    round_timeout : float, default 300.0
        Seconds the coordinator waits for the replies of a round; a party that has not answered is left
        out of it. A party still reading its data when this has passed (on its own clock, from when the
        message reached it) reserves no epsilon and refuses ``round_closed``.
    node_wait_timeout : float, default 60.0
        Seconds to wait for ``expected_parties`` (at least ``min_parties``) to connect before sending
        requests; the run then asks those connected, or none if they are fewer than ``min_parties``.
    readiness_check : bool, default True
        Before any party trains, ask each connected party whether it would serve the train request (Flower's
        ``query`` message; :mod:`server._readiness`): when fewer than ``min_parties`` would, the run fails
        before any train request, so no party spends ε on a run that cannot make a model.  No ε, no data.
    exact_metrics : bool, default False
        Ask the parties for un-noised held-out metrics instead of noised counts: not DP; a party refuses
        unless its policy allows it, and the guarantee says so.
    keys_dir : str
        A directory of the parties' public keys (``<party-id>.pub.pem``); when set, unsigned or wrongly
        signed releases are rejected.
    test_data_path : str
        Labelled data the coordinator may use (public, or its own; never a party's) for the global
        model's evaluation in the report: exact statistics of these rows, no party's ε.
    target_parties : int, 0 or >= max(min_parties, 2 tolerated_parties + 1) with selective_aggregation, default 0
        With ``selective_aggregation``, keep at most this many parties (0: no cap).  The selection never keeps
        fewer than ``min_parties``, nor fewer than ``2 tolerated_parties + 1`` (three by default; when that many
        were accepted): from that many releases on the merge bounds ``tolerated_parties`` parties' say
        (``edprf_core.forest.bounded_influence_parts``), and the validation rows cannot tell an honest sharp party
        from one that skipped its noise.
    tolerated_parties : int in [1, 1000], default 1
        How many hostile parties acting together the merge bounds (item 5 of ``edprf_core._leaf_distribution``):
        each party's say is compared with the ``(f+1)``-th largest, which needs ``2 f + 1`` releases (fewer bound
        as many as they can).  With 1, two colluding parties, each the other's reference, can decide the model
        (``tests/core/test_colluding_parties.py``: the wall robot at 5-8 % accuracy); 2 holds them (44 of 48
        cells of ``benchmarks/results/colluding_parties.md``; the misses are the wall robot under label skew).  The
        price for honest parties: at most 0.3 points with IID parties, but under Dirichlet 0.5 label skew 0.2 to
        5.6 points on average (up to 34 on one seed with 5 parties): a class one or two parties hold is counted at
        the third's weight.  Recorded in the global model, whose pooling then uses it wherever it is scored
        (parties, ``edprf predict``, ONNX).
    flag_alpha : float in (0, 1), default 0.01
        Level of the one-sided test that flags a party whose trees carry much less than the others'.
    max_release_bytes : int >= 1, default 64 MiB
        Largest release the coordinator decodes, checked before parsing; a release above the largest an honest
        party can send for the run's request (``protocol.largest_release_bytes``: its trees, depth, split mode,
        grids, classes and leaf output, every count at the wire's widest) is refused before parsing too.  The
        smaller of the two is what the output directory's free-space check counts per party.
    marginals_share : "auto" or a number in [0, 1), default "auto"
        Share of its rows every party gives to the marginals part (one-way class histograms, summed across
        parties and mixed with the trees' probabilities); the trees get the others.  ``"auto"``: the public
        rule ``edprf_core.marginals.marginals_share_rule`` of ``consortium_rows`` (two classes: 0 or 0.9;
        more classes: 0), and 0 (trees only) while ``consortium_rows`` is not declared: no size is inferred.
        0: trees only.  One share for the whole consortium, sent in the request; a release with another is
        rejected.
    marginals_bins : int, 0 or >= 2, default 0
        Bins of the marginals part's public grid, one for the whole consortium (the parties' histograms are
        summed cell by cell).  0: the public rule ``edprf_core.marginals.marginals_n_bins`` of the marginals'
        share of ``consortium_rows`` (5 bins while it is not declared).
    consortium_rows : int >= 0, default 0
        Public (declared, e.g. published) total training rows of the consortium: the size the marginals rules
        read.  0: not declared.
    spend_record : str, default "auto"
        The coordinator's record of the ε each party's verified releases and noised evaluations charged
        (SQLite, kept across runs), sent with every train request: a party whose ledger holds less (its whole
        host restored from a snapshot or backup) counts the difference as spent before it serves.  Needs ``keys_dir`` (only a
        signed release names its party reliably).  ``"auto"``: ``spend-record.sqlite`` beside ``output_dir``
        (in its parent directory, shared by the runs kept there) when ``keys_dir`` is set, else none;
        ``"none"``: no record; any other value: the file's path.
    supernode_keys_dir : str, default "auto"
        The parties' SuperNode authentication keys as registered with ``flwr supernode register``
        (``<party-id>.auth.key.pub``).  Matched with the keys of the connected SuperNodes (SuperNode
        authentication), they name the parties of ``keys_dir`` that did not connect when fewer connect than
        wanted, before any request is sent; a SuperNode registered with ``--name <party-id>`` is named without
        them.  Names for the report and the log only: nothing is accepted or refused by them.  ``"auto"``: the
        ``supernode-keys`` directory beside ``keys_dir``, if there is one; ``"none"``: not used; any other value:
        the directory.  Needs ``keys_dir``.
    """

    schema_path: str = ""
    sim_dir: str = ""
    output_dir: str = "edprf-output"
    epsilon: float = 1.0
    max_depth: int = 8
    depth_rule: str = "auto"
    leaf: str = "counts"
    n_trees: int = 1
    split_mode: str = "binary"
    n_bins: int = 20
    relation: str = "add-remove"
    seed: int = -1
    min_parties: int = 1
    expected_parties: int = 0
    round_timeout: float = 300.0
    node_wait_timeout: float = 60.0
    readiness_check: bool = True
    evaluation_epsilon: float = 0.1
    evaluation_max_interval_width: float = 0.1
    exact_metrics: bool = False
    keys_dir: str = ""
    test_data_path: str = ""
    validation_data_path: str = ""
    selective_aggregation: bool = False
    target_parties: int = 0
    tolerated_parties: int = 1
    exclude_flagged: bool = False
    flag_alpha: float = 0.01
    max_release_bytes: int = 64 << 20
    require_exact_sampling: bool = True
    max_party_rows: int = 0
    request_tag: str = ""
    overwrite: bool = False
    evaluate_resumed: bool = False
    marginals_share: str = "auto"
    marginals_bins: int = 0
    consortium_rows: int = 0
    spend_record: str = "auto"
    supernode_keys_dir: str = "auto"

    def __post_init__(self) -> None:
        check_fields(self, _RULES)
        _marginals_share_setting(self.marginals_share)
        if self.marginals_bins == 1:
            raise ValueError("marginals-bins: expected 0 (the rule) or an integer >= 2, got 1")
        if (self.selective_aggregation or self.exclude_flagged) and not self.validation_data_path and not self.sim_dir:
            raise ValueError("selective-aggregation and exclude-flagged need validation-data-path")
        floor = max(self.min_parties, self.bounded_influence_parts)
        if self.selective_aggregation and 0 < self.target_parties < floor:
            raise ValueError(
                f"target-parties: expected 0 (no cap) or >= {floor}, got {self.target_parties}: selective aggregation "
                f"keeps at least min-parties ({self.min_parties}) and at least {self.bounded_influence_parts} "
                f"parties, from which the merge bounds the say of tolerated-parties ({self.tolerated_parties}) hostile "
                "parties acting together"
            )
        if not self.schema_path and not self.sim_dir:
            raise ValueError("schema-path: the coordinator needs the public schema (or sim-dir in simulation)")
        if self.spend_record not in ("auto", "none") and not self.keys_dir:
            raise ValueError(
                "spend-record: a record file needs keys-dir (only a signed release names its party reliably); "
                f'got {self.spend_record!r} without keys-dir; use "auto" or "none"'
            )
        if self.supernode_keys_dir not in ("auto", "none") and not self.keys_dir:
            raise ValueError(
                "supernode-keys-dir: names the parties of keys-dir, which is not given; got "
                f'{self.supernode_keys_dir!r}; use "auto" or "none"'
            )

    @classmethod
    def from_run_config(cls, run_config: Mapping[str, Any]) -> CoordinatorConfig:
        # other apps' keys may share the run config: ignored; values may arrive as strings: cast
        return cls(**from_kebab(cls, run_config, what="run config", unknown="ignore", values="cast"))

    def run_config(self) -> dict[str, Any]:
        """``{kebab-key: value}`` of every setting: what ``flwr run --run-config`` gives to run this config,
        whatever the app's ``[tool.flwr.app.config]`` holds (:meth:`from_run_config` reads it back)."""
        return kebab_values(self)

    def marginals_plan(self, schema: Schema, n_parties: int = 1) -> tuple[float, int]:
        """``(share, bins)`` of the marginals part every party is asked for, from public figures only.

        The configured share or the public rule of ``consortium_rows`` (declared) at ``epsilon`` and the
        schema's feature and class counts; the configured bins or the bins rule of the marginals' share of
        ``consortium_rows`` at the *summed* histograms' effective budget ``epsilon / sqrt(n_parties)`` (the sum
        of ``n_parties`` releases has ``sqrt(n_parties)`` times one release's noise, so its cells are as noisy
        as one release of all the rows at that budget; ``n_parties`` is the number of parties asked, known to
        the coordinator).  Chosen on inner validation splits (``benchmarks/bench_federated_defaults.py``):
        with 20 parties it moved diabetes at ε = 0.5 from 5.8 to 2.3 points behind central.  ``(0.0, 0)``:
        trees only.  Privacy cost: none (public figures).
        """
        check_fields(SimpleNamespace(n_parties=n_parties), {"n_parties": Integer(1)}, key=str)  # the config's own rule
        share = _marginals_share_setting(self.marginals_share)
        rows = self.consortium_rows
        if share is None:
            share = marginals_share_rule(rows, schema.n_features, schema.n_classes, self.epsilon) if rows else 0.0
        if share == 0:
            return 0.0, 0
        if self.marginals_bins:
            return share, self.marginals_bins
        if not rows:
            return share, MARGINALS_BINS_LOW
        summed_epsilon = effective_epsilon([self.epsilon] * n_parties)  # the merge's description of the sum's noise
        return share, marginals_n_bins(max(1, round(share * rows)), schema.n_features, summed_epsilon)

    @property
    def spend_record_file(self) -> Path | None:
        """Where the spend record is kept (None: no record, see ``spend_record``)."""
        if self.spend_record == "none" or not self.keys_dir:
            return None
        if self.spend_record == "auto":
            return Path(self.output_dir).absolute().parent / "spend-record.sqlite"
        return Path(self.spend_record)

    @property
    def supernode_keys_path(self) -> Path | None:
        """The directory of the SuperNodes' registered keys (None: not used, see ``supernode_keys_dir``)."""
        if self.supernode_keys_dir == "none" or not self.keys_dir:
            return None
        if self.supernode_keys_dir == "auto":
            beside = Path(self.keys_dir).absolute().parent / "supernode-keys"
            return beside if beside.is_dir() else None
        return Path(self.supernode_keys_dir)

    @property
    def schema_file(self) -> Path:
        return Path(self.schema_path) if self.schema_path else Path(self.sim_dir) / "schema.toml"

    @property
    def parties_to_wait_for(self) -> int:
        """Connected parties the coordinator waits for before it sends requests."""
        expected = self.expected_parties
        if expected == 0 and self.sim_dir:
            # the coordinator laid this workspace out itself: its party count is not a party's data
            expected = sum(1 for d in Path(self.sim_dir).glob("party-*") if d.is_dir())
        return max(self.min_parties, expected)

    @property
    def validation_file(self) -> Path | None:
        return self._coordinator_file(self.validation_data_path, "validation.csv")

    @property
    def bounded_influence_parts(self) -> int:
        """The fewest releases from which the merge bounds ``tolerated_parties`` parties' say: ``2 f + 1``."""
        return bounded_influence_parts(self.tolerated_parties)

    @property
    def test_file(self) -> Path | None:
        return self._coordinator_file(self.test_data_path, "test.csv")

    def _coordinator_file(self, given: str, workspace_name: str) -> Path | None:
        """A path from the run config, else the simulation workspace's file of that name, if present."""
        if given:
            return Path(given)
        candidate = Path(self.sim_dir) / workspace_name if self.sim_dir else None
        return candidate if candidate is not None and candidate.is_file() else None


_RULES = {
    "epsilon": Number(0, low_open=True),
    "evaluation_epsilon": Number(0),
    "max_depth": Integer(1, text=">= 1"),
    "n_trees": Integer(1, text=">= 1"),
    "n_bins": Integer(2, text=">= 2"),
    "min_parties": Integer(1, text=">= 1"),
    "depth_rule": OneOf(DEPTH_REQUESTS),
    "leaf": OneOf(LEAF_OUTPUTS),
    "flag_alpha": Number(0, 1, low_open=True, high_open=True),
    "expected_parties": Integer(0, text=">= 0"),
    "request_tag": Text(
        pattern=_TAG.pattern,
        optional=True,
        text="1..64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)",
    ),
    "max_party_rows": Integer(0, text=">= 0 (0: not declared)"),
    "evaluation_max_interval_width": Number(0, low_open=True, finite=False, text="a number > 0 (1: no check)"),
    "target_parties": Integer(0, text=">= 0"),
    "tolerated_parties": Integer(1, MAX_TOLERATED_PARTIES),
    "marginals_bins": Integer(0, text="0 (the rule) or >= 2"),
    "consortium_rows": Integer(0, text=">= 0 (0: not declared)"),
    "spend_record": Text(pattern=r".+", text='"auto", "none" or a file path'),
    "supernode_keys_dir": Text(pattern=r".+", text='"auto", "none" or a directory'),
}
"""Each run-config setting with its rule (messages: ``"<key>: expected <rule>, got <value>"``)."""


def _marginals_share_setting(value: str) -> float | None:
    """``marginals-share`` as a number in [0, 1), or None for ``"auto"``; ValueError naming the key otherwise."""
    if value == "auto":
        return None
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = math.nan
    if not 0 <= share < 1:
        raise ValueError(f'marginals-share: expected "auto" or a number in [0, 1), got {value!r}')
    return share


DEFAULT_RUN_CONFIG = kebab_defaults(CoordinatorConfig)
"""``{kebab-key: default}`` of every setting: the one source of the run-config defaults."""
