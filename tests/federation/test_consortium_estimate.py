"""The consortium's held-out accuracy: unbiased pooling, intervals that cover, one party's bounded reach,
and an evaluation that is not run (nothing sent, nothing charged) when it could not inform.

Statistical checks simulate federations of noised counts with a known truth under fixed seeds; their
bounds come from the binomial and normal error of the simulation itself (stated beside each).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from client import read_ledger_readonly
from edprf_core.mechanisms import discrete_laplace_counts
from server import REPORT_FILE, CoordinatorConfig
from server._consortium_estimate import (
    bias_corrected_ratio,
    coalition_robust_interval,
    noise_margin,
    noise_variance,
    one_party_robust_interval,
    planned_width,
    score_interval,
    smallest_informative_epsilon,
)
from server._evaluation import evaluation_plan, evaluation_summary

REPS = 1000
"""Federations per setting: the coverage of a 95 % interval is then known to +-0.007 (one binomial SE)."""


def _federations(rows: np.ndarray, accuracy: np.ndarray, epsilon: float, seed: int) -> tuple[np.ndarray, ...]:
    """``REPS`` federations: true correct ~ Binomial(rows, accuracy) per party, then the parties' real noise."""
    rng = np.random.default_rng(seed)
    correct = rng.binomial(np.broadcast_to(rows, (REPS, len(rows))), accuracy)
    exact = np.stack([correct, np.broadcast_to(rows, correct.shape)], axis=-1)
    noisy = discrete_laplace_counts(exact, epsilon, sensitivity=2, rng=rng)
    return noisy[..., 0], noisy[..., 1]


SETTINGS = {  # name: (held-out rows per party, accuracy per party, evaluation epsilon)
    "5 parties IID, eps 1": (np.full(5, 200), np.full(5, 0.8), 1.0),
    "5 parties non-IID sizes and accuracies, eps 0.5": (
        np.array([50, 120, 200, 400, 900]),
        np.array([0.95, 0.6, 0.85, 0.73, 0.8]),
        0.5,
    ),
    "20 small parties, eps 1": (np.full(20, 50), np.full(20, 0.8), 1.0),
    "20 small parties, eps 0.1": (np.full(20, 50), np.full(20, 0.8), 0.1),
    "3 hospitals of 300 rows, eps 0.1": (np.full(3, 300), np.array([0.9, 0.85, 0.92]), 0.1),
    "1 party, eps 0.5": (np.array([100]), np.array([0.7]), 0.5),
}


def test_noise_variance_is_that_of_the_parties_discrete_laplace_noise():
    rng = np.random.default_rng(1)
    for eps in (0.1, 1.0):
        draws = discrete_laplace_counts(np.zeros(200_000, dtype=np.int64), eps, sensitivity=2, rng=rng)
        # Laplace kurtosis 6: the sample variance's relative SE is sqrt(5 / 200,000) = 0.5 %
        assert np.var(draws) == pytest.approx(noise_variance(eps), rel=0.03)
    a = math.exp(-1 / 20)  # scale t = 2 / 0.1
    assert noise_variance(0.1) == pytest.approx(2 * a / (1 - a) ** 2, rel=1e-12)
    assert noise_variance(0.0) == 0.0


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_pooled_estimate_is_unbiased_and_its_interval_covers(name):
    rows, accuracy, eps = SETTINGS[name]
    truth = float((rows * accuracy).sum() / rows.sum())
    correct, total = _federations(rows, accuracy, eps, seed=100 + list(SETTINGS).index(name))
    v, k = noise_variance(eps), len(rows)
    estimates = np.array([bias_corrected_ratio(c, t, k, v) for c, t in zip(correct.sum(1), total.sum(1))])
    finite = np.isfinite(estimates)
    assert finite.mean() > 0.99
    se = estimates[finite].std() / math.sqrt(finite.sum())
    assert abs(estimates[finite].mean() - truth) <= 4 * se + 1e-3, (estimates[finite].mean(), truth, se)
    covered = np.mean(
        [lo <= truth <= hi for lo, hi in (score_interval(c, t, k, v) for c, t in zip(correct.sum(1), total.sum(1)))]
    )
    assert covered >= 0.93, covered  # nominal 0.95; 0.93 is 3 simulation SEs below it


def test_clipping_each_party_before_pooling_was_the_bias():
    """The previous estimator (each party clipped to 0 <= correct <= total, then pooled) on 20 small parties."""
    rows, accuracy, eps = SETTINGS["20 small parties, eps 0.1"]
    correct, total = _federations(rows, accuracy, eps, seed=20)
    t_clip = np.clip(total, 0, None)
    c_clip = np.clip(correct, 0, t_clip)
    old = c_clip.sum(1) / t_clip.sum(1)
    new = np.array([bias_corrected_ratio(c, t, 20, noise_variance(eps)) for c, t in zip(correct.sum(1), total.sum(1))])
    assert old.mean() < 0.8 - 0.03  # the reported 71.0 % against 80.6 %: clipping at t >= c pulls every party down
    assert abs(np.nanmean(new) - 0.8) < 0.015


def _honest(rows=400, accuracies=(0.85, 0.73, 0.85, 0.73), eps=0.1, seed=0):
    rng = np.random.default_rng(seed)
    replies = []
    for i, acc in enumerate(accuracies):
        c, t = discrete_laplace_counts(np.array([round(acc * rows), rows]), eps, sensitivity=2, rng=rng)
        replies.append((i, {"correct": int(c), "total": int(t), "epsilon": eps, "exact": 0}, ""))
    return replies


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_the_issues_forged_replies_have_no_say(eps):
    """(0 correct of 1,000,000) and (10^6 of 10^6) from one party, 4 honest parties measuring 0.85 and 0.73."""
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=eps, max_party_rows=500)
    honest = _honest(eps=eps)
    alone = evaluation_summary(honest, [], cfg)
    for forged in ((0, 10**6), (10**6, 10**6)):
        hostile = (99, {"correct": forged[0], "total": forged[1], "epsilon": eps, "exact": 0}, "")
        out = evaluation_summary([*honest, hostile], [], cfg)
        # beyond what any party of 500 held-out rows can send: refused, not pooled
        assert out["parties"] == 4 and out["refused"] == [{"node_id": 99, "reason": "implausible_metrics"}]
        assert out["accuracy"] == alone["accuracy"] and out["ci95"] == alone["ci95"]


# corners of the plausible box -m <= t <= B + m, -m <= c <= t + 2m, as (c, t) in units of (B, m)
CORNERS = {
    "none right": (lambda b, m: (0, b + m)),
    "all right": (lambda b, m: (b + 3 * m, b + m)),
    "most negative": (lambda b, m: (-m, -m)),
    "positive of negative": (lambda b, m: (m, -m)),
    "negative of most": (lambda b, m: (-m, b + m)),
}


@pytest.mark.parametrize("corner", list(CORNERS))
def test_one_hostile_reply_moves_the_estimate_by_at_most_its_share(corner):
    """B = 500 held-out rows at most, eps 1 (margin m = 24), 4 honest parties of 400 rows."""
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=1.0, max_party_rows=500)
    honest = _honest(eps=1.0)
    alone = evaluation_summary(honest, [], cfg)
    m = noise_margin(1.0)
    assert m == 24
    c, t = CORNERS[corner](500, m)
    out = evaluation_summary([*honest, (99, {"correct": c, "total": t, "epsilon": 1.0, "exact": 0}, "")], [], cfg)
    assert out["parties"] == 5
    move = abs(out["accuracy_unclipped"] - alone["accuracy_unclipped"])
    # the argument beside the code: its share of the pooled rows, times max(R, 1 - R), plus a noise term
    c_rest, t_rest = alone["noisy_correct"], alone["noisy_total"]
    r = c_rest / t_rest
    share = max((max(r, 1 - r) * (500 + m) + 2 * m) / (t_rest + 500 + m), (1 + r) * m / (t_rest - m))
    assert share < 0.25  # 500 of 2,100 rows
    assert move <= share * 1.01 + 1e-9  # 1 %: the bias correction's factor, (1 + k v / T^2) - 1 < 1 %
    assert move <= out["max_one_party_shift"] + 1e-12
    assert 0.55 < out["accuracy"] < 0.9  # not 0.0004, not 0.9999
    lo, hi = out["ci95_if_one_party_lied"]
    assert lo <= 0.79 <= hi  # the honest parties' truth


def test_the_reported_reach_bounds_every_plausible_reply():
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.5, max_party_rows=300)
    honest = _honest(rows=250, eps=0.5, seed=3)
    alone = evaluation_summary(honest, [], cfg)
    m = noise_margin(0.5)
    rng = np.random.default_rng(4)
    reach = []
    for _ in range(300):
        t = int(rng.integers(-m, 300 + m + 1))
        c = int(rng.integers(-m, t + 2 * m + 1))
        out = evaluation_summary([*honest, (9, {"correct": c, "total": t}, "")], [], cfg)
        assert out["parties"] == 5
        reach.append(out["max_one_party_shift"])
        assert abs(out["accuracy_unclipped"] - alone["accuracy_unclipped"]) <= out["max_one_party_shift"] + 1e-12
    # any one party's reach, computed with this reply among the others: its share 300 / (3 * 250 + 300) = 0.29
    # times max(R, 1 - R), plus the noise terms of its own and the forged reply
    assert max(reach) < 0.4


@pytest.mark.parametrize("hostile", [(0, 50 + 24), (50 + 72, 50 + 24), (-24, -24)])
def test_the_one_party_interval_covers_the_honest_truth_with_a_hostile_party(hostile):
    """20 small honest parties (eps 1) and one party replying at a corner of its plausible box (B = 50)."""
    rows, accuracy = np.full(20, 50), np.full(20, 0.8)
    correct, total = _federations(rows, accuracy, 1.0, seed=7)
    assert noise_margin(1.0) == 24
    v = noise_variance(1.0)
    covered = plain = 0
    for c, t in zip(correct, total):
        c, t = np.append(c, hostile[0]), np.append(t, hostile[1])
        lo, hi = one_party_robust_interval(c, t, v)
        covered += lo <= 0.8 <= hi
        lo, hi = score_interval(c.sum(), t.sum(), 21, v)
        plain += lo <= 0.8 <= hi
    assert covered / REPS >= 0.93
    assert plain / REPS < covered / REPS  # the plain interval assumes everyone honest


def _in_box(rng: np.random.Generator, bound: int, margin: int) -> tuple[int, int]:
    """A reply ``(correct, total)`` drawn in the plausible box ``-m <= t <= B + m``, ``-m <= c <= t + 2m``."""
    t = int(rng.integers(-margin, bound + margin + 1))
    return int(rng.integers(-margin, t + 2 * margin + 1)), t


def test_two_parties_acting_together_stay_within_the_reported_two_party_reach():
    """18 honest parties of 80 held-out rows (eps 1, B = 82, m = 24) and two that reply together anywhere in their
    boxes (the corners, then random points): the move is within ``max_two_party_shift``, which one party's bound
    does not hold (rev-eval E1: two liars of 20 moved the estimate 1.5 times the one-party bound)."""
    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=1.0, max_party_rows=82)
    honest = _honest(rows=80, accuracies=(0.55,) * 18, eps=1.0, seed=5)
    alone = evaluation_summary(honest, [], cfg)
    m = noise_margin(1.0)
    rng = np.random.default_rng(6)
    corners = [(-m, 82 + m), (82 + 3 * m, 82 + m), (-m, -m), (m, -m)]
    pairs = [(a, b) for a in corners for b in corners] + [
        (_in_box(rng, 82, m), _in_box(rng, 82, m)) for _ in range(100)
    ]
    moves = []
    for first, second in pairs:
        liars = [
            (90 + i, {"correct": c, "total": t, "epsilon": 1.0, "exact": 0}, "")
            for i, (c, t) in enumerate((first, second))
        ]
        out = evaluation_summary([*honest, *liars], [], cfg)
        assert out["parties"] == 20
        move = abs(out["accuracy_unclipped"] - alone["accuracy_unclipped"])
        assert move <= out["max_two_party_shift"] + 1e-12
        moves.append((move, out["max_one_party_shift"]))
    worst, one_party = max(moves)
    assert worst > one_party  # two together go further than the one-party bound says
    # about twice one party's reach: each coalition moves the estimate by about its share of the pooled rows
    assert 1.5 * one_party < out["max_two_party_shift"] < 2.5 * one_party


def test_a_declared_tolerated_parties_above_two_gets_its_own_reach_and_interval():
    """tolerated-parties 3 (the merge holds three hostile parties): the evaluation reports what three replies
    together can move, at least the two-party reach, and an interval that covers when three lie; three liars at
    the box's corners stay within that reach.  Above :data:`MAX_COALITIONS` sets it says it did not search."""
    from server._evaluation import MAX_COALITIONS
    from server._summary import federated_evaluation_lines

    cfg = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=1.0, max_party_rows=82, tolerated_parties=3)
    honest = _honest(rows=80, accuracies=(0.55,) * 12, eps=1.0, seed=9)
    alone = evaluation_summary(honest, [], cfg)
    m = noise_margin(1.0)
    liars = [(90 + i, {"correct": -m, "total": 82 + m, "epsilon": 1.0, "exact": 0}, "") for i in range(3)]
    out = evaluation_summary([*honest, *liars], [], cfg)
    assert out["tolerated_parties"] == 3
    assert out["max_two_party_shift"] < out["max_tolerated_parties_shift"]
    assert abs(out["accuracy_unclipped"] - alone["accuracy_unclipped"]) <= out["max_tolerated_parties_shift"]
    assert out["max_one_party_shift"] < abs(out["accuracy_unclipped"] - alone["accuracy_unclipped"])
    lo, hi = out["ci95_if_tolerated_parties_lied"]
    assert lo <= alone["accuracy_unclipped"] <= hi  # the honest parties' own estimate
    said = "\n".join(federated_evaluation_lines(out))
    assert "3 parties' replies together (tolerated-parties) can move it by at most" in said and "if 3 lied" in said
    default = evaluation_summary([*honest, *liars], [], CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=1.0))
    assert "tolerated_parties" not in default  # one and two are always given: nothing more for the default
    many = [(i, {"correct": 40, "total": 80, "epsilon": 1.0, "exact": 0}, "") for i in range(150)]
    assert math.comb(150, 3) > MAX_COALITIONS
    big = evaluation_summary(many, [], cfg)
    assert big["ci95_if_tolerated_parties_lied"] is None and big["max_tolerated_parties_shift"] is None
    assert "not computed" in "\n".join(federated_evaluation_lines(big))
    # the cap is on the work, sets times their size: f = 998 of 1,000 parties (499,500 sets of 998) is not searched
    wide = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=1.0, max_party_rows=82, tolerated_parties=998)
    thousand = [(i, {"correct": 40, "total": 80, "epsilon": 1.0, "exact": 0}, "") for i in range(1000)]
    from server._evaluation import _tolerated_reach

    reach = _tolerated_reach(
        *(np.array([r[1][k] for r in thousand], dtype=float) for k in ("correct", "total")),
        0.5,
        82,
        24,
        wide.tolerated_parties,
    )
    assert reach["max_tolerated_parties_shift"] is None and reach["ci95_if_tolerated_parties_lied"] is None


@pytest.mark.parametrize("hostile", [(-24, 50 + 24), (50 + 72, 50 + 24)])
def test_the_two_party_interval_covers_the_honest_truth_with_two_hostile_parties(hostile):
    """20 small honest parties (eps 1, B = 50) and two parties replying at the same corner of their boxes."""
    rows, accuracy = np.full(20, 50), np.full(20, 0.8)
    correct, total = _federations(rows, accuracy, 1.0, seed=8)
    v = noise_variance(1.0)
    covered = one = 0
    for c, t in zip(correct, total):
        c, t = np.append(c, [hostile[0]] * 2), np.append(t, [hostile[1]] * 2)
        lo, hi = coalition_robust_interval(c, t, v, 2)
        covered += lo <= 0.8 <= hi
        lo, hi = one_party_robust_interval(c, t, v)
        one += lo <= 0.8 <= hi
    assert covered / REPS >= 0.93  # 95 % less 3 binomial SEs of 1,000 federations
    assert one / REPS < covered / REPS  # the one-party interval assumes at most one liar


def test_the_plan_is_what_the_interval_turns_out_to_be():
    """Planned width (each party at max-party-rows, worst accuracy) against the intervals of simulated runs."""
    for k, rows, eps in ((5, 200, 1.0), (3, 300, 0.3), (20, 50, 1.0)):
        planned = planned_width(k, rows, eps)
        for acc in (0.5, 0.8, 0.95):
            correct, total = _federations(np.full(k, rows), np.full(k, acc), eps, seed=k)
            v = noise_variance(eps)
            widths = [hi - lo for lo, hi in (score_interval(c, t, k, v) for c, t in zip(correct.sum(1), total.sum(1)))]
            assert np.median(widths) <= planned * 1.05
        assert np.median(widths) >= planned * 0.3  # not a vacuous plan


def test_the_skip_rule_decides_from_public_parameters():
    three_hospitals = CoordinatorConfig(schema_path="s.toml", evaluation_epsilon=0.1, max_party_rows=300)
    plan = evaluation_plan(three_hospitals, 3)
    assert not plan.send and plan.reason == "uninformative" and plan.planned_width > 0.1
    assert "no epsilon spent" in plan.message and "evaluation-epsilon 0.3" in plan.message
    assert planned_width(3, 300, plan.needed_epsilon) <= 0.1 < planned_width(3, 300, plan.needed_epsilon - 0.002)
    assert evaluation_plan(replace(three_hospitals, evaluation_epsilon=plan.needed_epsilon), 3).send
    assert evaluation_plan(replace(three_hospitals, evaluation_max_interval_width=1.0), 3).send  # check off
    assert evaluation_plan(replace(three_hospitals, exact_metrics=True), 3).send  # no epsilon at stake
    undeclared = evaluation_plan(CoordinatorConfig(schema_path="s.toml"), 3)
    assert not undeclared.send and undeclared.reason == "party_rows_not_declared"
    assert "max-party-rows" in undeclared.message
    tiny = evaluation_plan(replace(three_hospitals, max_party_rows=16), 5)  # heart disease: 16 rows a party
    assert tiny.planned_width > 1 and "more than the whole range 0-1 of an accuracy" in tiny.message
    assert "whole range" not in plan.message
    assert smallest_informative_epsilon(3, 20, 0.1) is None  # 60 rows: sampling alone is wider than 0.1
    assert "no epsilon would" in evaluation_plan(replace(three_hospitals, max_party_rows=20), 3).message
    assert (
        CoordinatorConfig.from_run_config(
            {"schema-path": "s", "evaluation-max-interval-width": "0.2", "max-party-rows": 300}
        ).evaluation_max_interval_width
        == 0.2
    )
    with pytest.raises(ValueError, match="evaluation-max-interval-width"):
        CoordinatorConfig(schema_path="s", evaluation_max_interval_width=0.0)


def test_the_demo_defaults_spend_nothing_on_an_uninformative_evaluation(tmp_path):
    """`./demo.sh` is `edprf simulate` with its defaults: 5 parties on the wall robot data."""
    from edprf_fl.simulation import prepare_workspace

    from .test_simulation import _settings

    workspace = prepare_workspace(_settings(parties=5, max_depth="auto", validation_size=0.1), tmp_path)
    cfg, parts = workspace.config, workspace.parts
    assert cfg.evaluation_epsilon == 0.1 and cfg.evaluation_max_interval_width == 0.1
    assert max(map(len, parts)) * 0.1 < cfg.max_party_rows < max(map(len, parts)) * 0.2
    plan = evaluation_plan(cfg, 5)
    assert not plan.send and plan.planned_width > 0.3


def _run(tmp_path, monkeypatch, **kw):
    """A 3-party in-process federation; returns its report and the message types the grid delivered."""
    from edprf_fl.simulation import prepare_workspace, simulate_federation
    from edprf_fl.simulation._in_process_engine import InProcessGrid

    from .test_simulation import _settings

    sent = []
    deliver = InProcessGrid._deliver

    def recording(self, message):
        sent.append(message.metadata.message_type)
        return deliver(self, message)

    monkeypatch.setattr(InProcessGrid, "_deliver", recording)
    cfg = prepare_workspace(_settings(parties=3, max_depth=3, **kw), tmp_path).config
    simulate_federation(cfg, 3)
    report = json.loads((tmp_path / REPORT_FILE).read_text())
    ledgers = [read_ledger_readonly(tmp_path / "workspace" / f"party-{i:04d}" / "ledger.sqlite") for i in range(3)]
    return report, sent, ledgers


@pytest.mark.slow
def test_a_skipped_evaluation_sends_no_request_and_charges_no_ledger(tmp_path, monkeypatch):
    from server import RunReport
    from server._summary import summary_lines

    report, sent, ledgers = _run(tmp_path, monkeypatch, evaluation_epsilon=0.1, party_holdout=0.1)
    assert report["status"] == "completed"
    ev = report["federated_evaluation"]
    assert ev["skipped"] == "uninformative" and ev["parties"] == 0 and ev["needed_epsilon"] > 0.1
    assert sent == ["train"] * 3  # no evaluate message
    assert [p["evaluation_epsilon"] for p in report["parties"]] == [0.0] * 3
    assert all([e.kind for e in entries] == ["release"] for entries in ledgers)
    assert "Spent for this run: epsilon = 1 per record" in report["guarantee"]
    assert "noised evaluation" not in report["guarantee"]
    lines = summary_lines(RunReport(run_id="r", parameters={}, schema_fingerprint="", federated_evaluation=ev))
    assert any("no epsilon spent" in line and "evaluation-epsilon" in line for line in lines)


@pytest.mark.slow
def test_an_informative_evaluation_is_asked_and_charged(tmp_path, monkeypatch):
    report, sent, ledgers = _run(tmp_path, monkeypatch, evaluation_epsilon=1.0, party_holdout=0.3)
    ev = report["federated_evaluation"]
    assert "skipped" not in ev and ev["parties"] == 3
    assert sent == ["train"] * 3 + ["evaluate"] * 3
    assert [p["evaluation_epsilon"] for p in report["parties"]] == [1.0] * 3
    assert all(sorted(e.kind for e in entries) == ["evaluation", "release"] for entries in ledgers)
    lo, hi = ev["ci95"]
    assert hi - lo <= 0.1 and lo <= report["central_evaluation"]["accuracy"] + 0.1
    assert 0 < ev["max_one_party_shift"] < 0.5
