#!/usr/bin/env python
"""Seed sweep of ``tests/federation/test_simulation.py::test_shuffled_label_party_is_flagged_and_dropped_by_selection``.

Runs the test's federation (the embedded wall robot data, 5 parties, depth 5, 16 bins, epsilon 1, one tree
per party with leaf counts, seeded research noise, the coordinator keeps 15 % of the training rows as its
validation data, party 3 trains on shuffled labels, selective aggregation with ``exclude_flagged``) through
the same call the test makes (``run_simulation``, in-process engine: the real ServerApp and ClientApps,
no Ray), once per seed, and records

- which of the test's assertions fail (each one checked on its own, not stopping at the first);
- every party's information bits, kappa with the others, probability lift, its standard error, the
  flag's threshold and p-value, and the flag;
- for the information bits, a bootstrap standard error over the validation rows and the plug-in bias
  ``(L - 1)(K - 1) / (2 n ln 2)`` of a leaf-by-class mutual information with ``L`` leaves reached.

The coordinator's ``party_contributions`` is wrapped (not changed) to keep the merged forest's numbers.

    python benchmarks/flagging_seeds.py --seeds 300   # ~10 min on 2 cores (--from-json: rewrite the report only)

Writes ``results/flagging_seeds.md`` and ``results/flagging_seeds.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import math
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = Path(__file__).resolve().parent / "results"

BAD = "party-0003"

ASSERTIONS = {
    "A1 bad flagged": "bad['flagged']",
    "A2 bad kappa < 0.2": "bad['kappa_with_others'] < 0.2",
    "A3 no honest flagged": "not any honest flagged",
    "A4 bad bits < 0.5 min honest": "bad bits < 0.5 * min honest bits",
    "A5 bad dropped flagged_low_quality": "status of party-0003",
    "A6 selection over honest": "sorted(kept + dropped) == honest",
    "A7 path ends at max": "validation_accuracy_path[-1] == max",
    "A8 model parties": "bad not in model, model parties == kept",
    "A9 manifest selection": "manifest selection == report selection",
}


REVISED = {
    "B1 bad flagged (conclusive)": "bad['flagged'] and not bad['flag_inconclusive']",
    "B2 no honest flagged": "not any honest flagged",
    "B3 bad lift < 0.2 x median honest lift": "the flag's statistic, 2 * LIFT_SHARE of the honest median",
    "B4 bad kappa < median honest kappa": "descriptive: agrees less than a typical honest party",
    "B4b bad bits < max honest bits": "descriptive: below the most informative honest party",
    "B5 bad dropped flagged_low_quality": "= A5",
    "B6 selection over honest": "= A6",
    "B7 path ends at max": "= A7",
    "B8 model parties": "= A8",
    "B9 manifest selection": "= A9",
}


def revised_checks(r: dict) -> dict[str, bool]:
    """The revised test's assertions, from a run's record."""
    bad = r["parties"][BAD]
    honest = [c for p, c in r["parties"].items() if p != BAD]
    old = r["checks"]
    return {
        "B1 bad flagged (conclusive)": bool(bad["flagged"] and not bad["flag_inconclusive"]),
        "B2 no honest flagged": not any(c["flagged"] for c in honest),
        "B3 bad lift < 0.2 x median honest lift": bad["probability_lift"]
        < 0.2 * float(np.median([c["probability_lift"] for c in honest])),
        "B4 bad kappa < median honest kappa": bad["kappa_with_others"]
        < float(np.median([c["kappa_with_others"] for c in honest])),
        "B4b bad bits < max honest bits": 0 <= bad["information_bits"] < max(c["information_bits"] for c in honest),
        "B5 bad dropped flagged_low_quality": old["A5 bad dropped flagged_low_quality"],
        "B6 selection over honest": old["A6 selection over honest"],
        "B7 path ends at max": old["A7 path ends at max"],
        "B8 model parties": old["A8 model parties"],
        "B9 manifest selection": old["A9 manifest selection"],
    }


def _settings(seed: int, shuffled: bool = True, exclude_flagged: bool = True):
    from edprf_fl.simulation import SimulationSettings

    return SimulationSettings(
        parties=5,
        max_depth=5,
        n_bins=16,
        validation_size=0.15,
        seeded_noise=True,
        evaluation_epsilon=0.0,
        party_holdout=0.0,
        shuffled_label_parties=[3] if shuffled else [],
        selective=True,
        exclude_flagged=exclude_flagged,
        baselines=False,
        seed=seed,
    )


def _diagnostics(forest, codes, y, boot: int, seed: int) -> dict:
    """Per part: lift and its se, information bits, its bootstrap se and plug-in bias."""
    from server import _contribution as c

    parts = list(c._leaves_by_part(forest, codes))
    leaves = np.concatenate(parts)  # (n_trees, n_rows): the bootstrap draws rows of it
    nodes = forest.node_distributions()
    lift_se = [c.probability_lift(c._part_probabilities(nodes, part), y) for part in parts]
    k = forest.schema.n_classes
    n = y.size
    rng = np.random.default_rng(10_000 + seed)

    def information(rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return c._information(forest, c._node_class_counts(forest, rows, labels), labels)

    info = information(leaves, y)
    boots = np.empty((boot, info.size))
    for b in range(boot):
        idx = rng.integers(0, n, n)
        boots[b] = information(leaves[:, idx], y[idx])
    bounds = forest.part_bounds
    out = []
    for i in range(len(forest.parts)):
        reached = int(sum(np.unique(leaves[t]).size for t in range(bounds[i], bounds[i + 1])))
        n_trees = bounds[i + 1] - bounds[i]
        out.append(
            {
                "lift": lift_se[i][0],
                "lift_se": lift_se[i][1],
                "bits_boot_se": float(boots[:, bounds[i] : bounds[i + 1]].mean(axis=1).std(ddof=1)),
                "leaves_reached": reached / n_trees,
                "bits_plugin_bias": (reached / n_trees - 1) * (k - 1) / (2 * n * math.log(2)),
            }
        )
    return {"n_validation": int(n), "n_classes": int(k), "parts": out}


def run_one(job: tuple) -> dict:
    seed, shuffled, exclude_flagged, boot = job
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    import server._coordinator as coord
    from edprf_fl.simulation import run_simulation
    from protocol import load_global_model

    captured: dict = {}
    real = coord.party_contributions

    def wrapped(forest, codes, y, alpha=0.01):
        captured.update(_diagnostics(forest, codes, y, boot, seed))
        captured["labels"] = [label for label, _, _ in forest.parts]
        return real(forest, codes, y, alpha=alpha)

    coord.party_contributions = wrapped
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        fed = run_simulation(_settings(seed, shuffled, exclude_flagged), Path(tmp)).federated
        view = load_global_model(Path(tmp) / "global-model.edprf")
        model_parties = sorted(view.parties)
        manifest_selection = view.manifest.get("selection")
    seconds = time.perf_counter() - t0
    coord.party_contributions = real

    by_party = {c["party"]: dict(c) for c in fed["contributions"]}
    for label, d in zip(captured["labels"], captured["parts"], strict=True):
        by_party[label].update(d)
    bad = by_party[BAD]
    honest = {p: c for p, c in by_party.items() if p != BAD}
    statuses = {p["party_id"]: (p["status"], p["reason"]) for p in fed["parties"]}
    sel = fed.get("selection") or {}
    checks = {
        "A1 bad flagged": bool(bad["flagged"]),
        "A2 bad kappa < 0.2": bad["kappa_with_others"] < 0.2,
        "A3 no honest flagged": not any(c["flagged"] for c in honest.values()),
        "A4 bad bits < 0.5 min honest": bad["information_bits"]
        < 0.5 * min(c["information_bits"] for c in honest.values()),
        "A5 bad dropped flagged_low_quality": tuple(statuses[BAD]) == ("dropped", "flagged_low_quality"),
        "A6 selection over honest": sorted(sel.get("kept", []) + sel.get("dropped", [])) == sorted(honest),
        "A7 path ends at max": bool(sel)
        and sel["validation_accuracy_path"][-1] == max(sel["validation_accuracy_path"]),
        "A8 model parties": BAD not in model_parties and model_parties == sorted(sel.get("kept", [])),
        "A9 manifest selection": manifest_selection == sel,
    }
    return {
        "seed": seed,
        "shuffled": shuffled,
        "exclude_flagged": exclude_flagged,
        "seconds": seconds,
        "n_validation": captured["n_validation"],
        "parties": by_party,
        "statuses": {k: list(v) for k, v in statuses.items()},
        "selection": sel,
        "checks": checks,
    }


def _fmt(x: float, d: int = 3) -> str:
    return f"{x:.{d}f}"


def _clopper(k: int, n: int) -> str:
    from scipy import stats

    lo = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
    return f"{k}/{n} = {k / n:.3f} ({lo:.3f}-{hi:.3f})"


def _diagnosis(runs: list[dict], controls: list[dict]) -> list[str]:
    """Why the original assertions fail: numbers computed from the runs."""
    bad = [r["parties"][BAD] for r in runs]
    hon = [c for r in runs for p, c in r["parties"].items() if p != BAD]
    lift = np.array([b["probability_lift"] for b in bad])
    lift_se = np.array([b["lift_se"] for b in bad])
    bits = np.array([b["information_bits"] for b in bad])
    bits_se = np.array([b["bits_boot_se"] for b in bad])
    bias = np.array([b["bits_plugin_bias"] for b in bad])
    hbits = np.array([c["information_bits"] for c in hon])
    hbits_se = np.array([c["bits_boot_se"] for c in hon])
    rel = []  # every honest party's lift over the median of the other honest parties of its run
    for r in runs + controls:
        lifts = {p: c["probability_lift"] for p, c in r["parties"].items() if p != BAD or not r["shuffled"]}
        rel += [v / np.median([w for p2, w in lifts.items() if p2 != p]) for p, v in lifts.items()]
    rel = np.array(rel)
    bad_rel = [
        b["probability_lift"] / np.median([c["probability_lift"] for p, c in r["parties"].items() if p != BAD])
        for r, b in zip(runs, bad, strict=True)
    ]
    ctrl_rel = [
        r["parties"][BAD]["probability_lift"]
        / np.median([c["probability_lift"] for p, c in r["parties"].items() if p != BAD])
        for r in controls
    ]
    kappa_gap = [
        b["kappa_with_others"] - np.median([c["kappa_with_others"] for p, c in r["parties"].items() if p != BAD])
        for r, b in zip(runs, bad, strict=True)
    ]
    over_min = sum(
        b["information_bits"] > min(c["information_bits"] for p, c in r["parties"].items() if p != BAD)
        for r, b in zip(runs, bad, strict=True)
    )
    return [
        "## Diagnosis",
        "",
        (
            "- The information assertion (A4) sits at the median of its own distribution: the shuffled party's "
            f"bits over the least informative honest party's have median {np.median(bits / np.array([min(c['information_bits'] for p, c in r['parties'].items() if p != BAD) for r in runs])):.2f}. "
            "A tree grown on shuffled labels still splits on the (informative) sensors, so its routes carry "
            f"information about the true label: {bits.mean():.3f} +- {bits.std(ddof=1):.3f} bits over seeds "
            f"(honest {hbits.mean():.3f} +- {hbits.std(ddof=1):.3f}; H(Y) of the wall data 1.71 bits).  This is "
            "not estimation noise: the bootstrap standard error over the validation rows is "
            f"{np.sqrt((bits_se**2).mean()):.3f} bits (honest {np.sqrt((hbits_se**2).mean()):.3f}) and the plug-in bias "
            f"(L - 1)(K - 1) / (2 n ln 2) {bias.mean():.3f} bits, so validation sampling explains "
            f"{(bits_se**2).mean() / bits.var(ddof=1):.0%} of the shuffled party's between-seed variance "
            f"({(hbits_se**2).mean() / hbits.var(ddof=1):.0%} of an honest one's); the rest is which splits the DP "
            "trees drew.  No theory bounds a shuffled tree's route information by half an honest tree's; the "
            f"shuffled party was above the least informative honest party on {over_min}/{len(runs)} seeds."
        ),
        (
            "- kappa_with_others (A2) is descriptive, as `server/_contribution.py` says: shallow DP trees' votes "
            f"agree by chance (shuffled kappa up to {max(b['kappa_with_others'] for b in bad):.2f}, honest down to "
            f"{min(c['kappa_with_others'] for c in hon):.2f}).  Relative to the same run's honest parties it is "
            f"consistent: the shuffled kappa minus the honest median was at most {max(kappa_gap):.2f}."
        ),
        (
            "- The flag (A1) misses on the rule's power, not on validation noise: the shuffled party's lift "
            f"varies over seeds with sd {lift.std(ddof=1):.4f}, {lift.std(ddof=1) / np.sqrt((lift_se**2).mean()):.1f} "
            f"times the standard error the test uses ({np.sqrt((lift_se**2).mean()):.4f}, the validation rows' "
            "sampling only: the right error for H0 'this tree's expected lift is >= 0.1 x median', whose "
            "expectation is over validation rows for the released tree).  A shuffled tree's leaf noise sometimes "
            "lines up with the true classes; its lift reached "
            f"{max(bad_rel):.3f} of the honest median (threshold 0.1).  The other misses are the guard: one of the "
            "four other parties below 0.2 x their median (25 % > 15 %) makes the test inconclusive."
        ),
        (
            f"- Honest parties: the lift of an honest party over its honest peers' median was at least {rel.min():.3f} "
            f"(1 % quantile {np.quantile(rel, 0.01):.3f}) over {rel.size} honest party-runs; party-0003 unshuffled: "
            f"at least {min(ctrl_rel):.3f}.  The shuffled party: at most {max(bad_rel):.3f}.  So 0.2 x the honest "
            "median (the guard's 2 x LIFT_SHARE) separated the shuffled party-0003 from an honest one on every run; "
            f"over all honest parties {np.mean(rel < 0.2):.1%} fall below it (the weak trees that trip the guard)."
        ),
        "",
    ]


def report(runs: list[dict], controls: list[dict], kept: list[dict], args) -> str:
    lines = [
        "# Seed sweep of the shuffled-label flagging test",
        "",
        (
            f"Command: `python benchmarks/flagging_seeds.py --seeds {args.seeds} --start {args.start}`"
            f" ({len(runs)} seeds {args.start}..{args.start + args.seeds - 1})."
        ),
        "",
        (
            "Setting (the test's): embedded wall robot data (5,456 rows, 4 classes), 20 % central test rows, the "
            "coordinator keeps 15 % of the remaining 80 % as validation rows "
            f"({runs[0]['n_validation']} rows), the rest split IID among 5 parties (about "
            f"{round(5456 * 0.8 * 0.85 / 5)} rows each); party-0003 trains on shuffled labels; depth 5, 16 bins, "
            "epsilon 1, one tree per party, leaf counts, seeded research noise; selective aggregation with "
            "exclude_flagged; in-process engine (the test's).  95 % Clopper-Pearson intervals in parentheses."
        ),
        "",
        "## Failures per assertion",
        "",
        "| assertion | failing seeds | seeds |",
        "|---|---|---|",
    ]
    n = len(runs)
    for name in ASSERTIONS:
        bad_seeds = [r["seed"] for r in runs if not r["checks"][name]]
        shown = ", ".join(map(str, bad_seeds[:25])) + (" ..." if len(bad_seeds) > 25 else "")
        lines.append(f"| {name} | {_clopper(len(bad_seeds), n)} | {shown} |")
    any_fail = [r["seed"] for r in runs if not all(r["checks"].values())]
    lines += ["", f"Seeds failing at least one assertion: {_clopper(len(any_fail), n)}.", ""]

    honest_flags = sum(c["flagged"] for r in runs for p, c in r["parties"].items() if p != BAD)
    fed_false = sum(any(c["flagged"] for p, c in r["parties"].items() if p != BAD) for r in runs)
    missed = sum(not r["parties"][BAD]["flagged"] for r in runs)
    inconcl = sum(r["parties"][BAD]["flag_inconclusive"] for r in runs)
    lines += [
        "## Error rates of the flag (the rule in `server/_contribution.py`)",
        "",
        f"- honest parties falsely flagged: {_clopper(honest_flags, 4 * n)} party-runs",
        f"- federations with at least one false flag: {_clopper(fed_false, n)}",
        (
            f"- shuffled party missed (not flagged): {_clopper(missed, n)}"
            f" (of which the test was inconclusive for it: {inconcl})"
        ),
        "",
    ]
    if controls:
        ctrl_flags = sum(c["flagged"] for r in controls for c in r["parties"].values())
        ctrl_pass = sum(all(r["checks"].values()) for r in controls)
        lines += [
            (
                f"Control, nobody shuffled ({len(controls)} seeds): parties flagged {_clopper(ctrl_flags, 5 * len(controls))}; "
                f"the test's assertions all hold in {ctrl_pass} (must be 0)."
            ),
            "",
        ]

    lines += [
        "## The revised test's assertions",
        "",
        (
            "Same runs; `holds, not shuffled` = the assertion holds with nobody shuffled (party-0003 honest; must be "
            "rare for the assertion to test anything); `holds, no exclusion` = with `exclude_flagged` off."
        ),
        "",
        "| assertion | failing seeds (shuffled) | holds, not shuffled | holds, no exclusion |",
        "|---|---|---|---|",
    ]
    for name in REVISED:
        failing = [r["seed"] for r in runs if not revised_checks(r)[name]]
        hc = sum(revised_checks(r)[name] for r in controls)
        hk = sum(revised_checks(r)[name] for r in kept)
        lines.append(
            f"| {name} | {_clopper(len(failing), n)} {', '.join(map(str, failing[:12]))} | "
            f"{hc}/{len(controls)} | {hk}/{len(kept)} |"
        )
    all_b = [r["seed"] for r in runs if not all(revised_checks(r).values())]
    lines += [
        "",
        (
            f"Seeds failing at least one revised assertion: {_clopper(len(all_b), n)} ({', '.join(map(str, all_b))}); "
            f"the revised test passes with nobody shuffled in {sum(all(revised_checks(r).values()) for r in controls)}"
            f"/{len(controls)} seeds and with exclude_flagged off in "
            f"{sum(all(revised_checks(r).values()) for r in kept)}/{len(kept)} (both must be 0)."
        ),
        "",
    ]

    lines += _diagnosis(runs, controls)

    def q(values, name):
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        pct = np.percentile(v, [0, 5, 25, 50, 75, 95, 100])
        return f"| {name} | " + " | ".join(_fmt(x) for x in pct) + f" | {_fmt(v.mean())} | {_fmt(v.std(ddof=1))} |"

    bad = [r["parties"][BAD] for r in runs]
    hon = [c for r in runs for p, c in r["parties"].items() if p != BAD]
    min_hon_bits = [min(c["information_bits"] for p, c in r["parties"].items() if p != BAD) for r in runs]
    ratio = [b["information_bits"] / m for b, m in zip(bad, min_hon_bits, strict=True)]
    lines += [
        "## Distributions over seeds",
        "",
        "| quantity | min | 5 % | 25 % | median | 75 % | 95 % | max | mean | sd |",
        "|---|---|---|---|---|---|---|---|---|---|",
        q([b["kappa_with_others"] for b in bad], "shuffled: kappa_with_others"),
        q([c["kappa_with_others"] for c in hon], "honest: kappa_with_others"),
        q([b["information_bits"] for b in bad], "shuffled: information bits"),
        q([c["information_bits"] for c in hon], "honest: information bits"),
        q(min_hon_bits, "min honest information bits"),
        q(ratio, "shuffled bits / min honest bits"),
        q([b["bits_boot_se"] for b in bad], "shuffled: bootstrap se of bits"),
        q([c["bits_boot_se"] for c in hon], "honest: bootstrap se of bits"),
        q([b["bits_plugin_bias"] for b in bad], "shuffled: plug-in bias of bits"),
        q([b["leaves_reached"] for b in bad], "shuffled: leaves reached"),
        q([c["leaves_reached"] for c in hon], "honest: leaves reached"),
        q([b["probability_lift"] for b in bad], "shuffled: probability lift"),
        q([c["probability_lift"] for c in hon], "honest: probability lift"),
        q([b["lift_se"] for b in bad], "shuffled: se of lift"),
        q([c["lift_se"] for c in hon], "honest: se of lift"),
        q([b["lift_threshold"] or float("nan") for b in bad], "threshold for shuffled (0.1 x others' median)"),
        q([b["p_value"] for b in bad], "shuffled: p-value"),
        q([c["p_value"] for c in hon], "honest: p-value"),
        q([r["seconds"] for r in runs], "seconds per run"),
        "",
        "## Per seed",
        "",
        (
            "Per party: information bits / kappa / lift (se) / threshold / p-value, `F` when flagged; failing "
            "assertions by number."
        ),
        "",
        "| seed | failing | " + " | ".join(f"party {i}" for i in range(5)) + " |",
        "|---|---|" + "---|" * 5,
    ]
    for r in runs:
        failing = ",".join(name.split()[0] for name, ok in r["checks"].items() if not ok) or "-"
        cells = []
        for i in range(5):
            c = r["parties"][f"party-{i:04d}"]
            thr = c["lift_threshold"]
            cells.append(
                f"{c['information_bits']:.3f} / {c['kappa_with_others']:.2f} / {c['probability_lift']:.3f} "
                f"({c['lift_se']:.3f}) / {'-' if thr is None else f'{thr:.3f}'} / {c['p_value']:.2g}"
                + (" F" if c["flagged"] else "")
            )
        lines.append(f"| {r['seed']} | {failing} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--controls", type=int, default=40, help="seeds run with nobody shuffled")
    ap.add_argument("--no-exclusion", type=int, default=40, help="seeds run with exclude_flagged off")
    ap.add_argument("--from-json", action="store_true", help="rewrite the report from the saved runs")
    ap.add_argument("--boot", type=int, default=200, help="bootstrap resamples of the validation rows")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="flagging_seeds")
    args = ap.parse_args()
    jobs = [(s, True, True, args.boot) for s in range(args.start, args.start + args.seeds)]
    jobs += [(s, False, True, args.boot) for s in range(args.start, args.start + args.controls)]
    jobs += [(s, True, False, args.boot) for s in range(args.start, args.start + args.no_exclusion)]
    saved = RESULTS / f"{args.out}.json"
    if args.from_json:
        results = json.loads(saved.read_text())
    else:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(run_one, jobs))
        print(f"{len(jobs)} runs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        RESULTS.mkdir(exist_ok=True)
        saved.write_text(json.dumps(results, separators=(",", ":"), default=float))
    runs = [r for r in results if r["shuffled"] and r["exclude_flagged"]]
    controls = [r for r in results if not r["shuffled"]]
    kept = [r for r in results if not r["exclude_flagged"]]
    text = report(runs, controls, kept, args)
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text[: text.find("## Per seed")])


if __name__ == "__main__":
    main()
