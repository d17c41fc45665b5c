#!/usr/bin/env python
"""Do the DP marginals federate? 20 parties under Dirichlet-0.5 label skew against central (issue 23)

Issue 23 asks that a federation of 20 parties under Dirichlet-0.5 label skew
come within 2 points of central DP.  Today's trees miss it on the wall robot
(each party picks its splits from about 220 rows, ``federation_depth.md``).
The DP one-way marginals of ``bench_marginals.py`` federate differently: each
party releases its own ``d`` noisy (bin x class) histograms at ε/d (ε-DP for
its records, the same argument as central), and the coordinator *adds* them.
The sum is the histogram of all parties' rows plus the parties' independent
noise: label skew does not enter at all, only the noise grows (P parties:
variance P times a party's).  The post-processing is the central one with the
noise level of the sum (``marginal_terms`` given ε / sqrt(P), P public).
Across parties the guarantee is ε per record, as long as one person's records
sit at one party.

Measured, per seed (the split protocol of ``bench_probabilities.py``),
ε in {0.5, 1, 2}, partitions ``iid`` and ``dirichlet-0.5`` over 20 parties
(``edprf_fl.simulation.partition_rows``, seeded like
``bench_federation_cost.py``):

- ``marginals, central`` and ``marginals, federated`` (the sum above); the
  bins rule reads the training size of the whole federation (a public figure
  the consortium declares; this protocol fixes it);
- ``trees, federated``: today's federation (one tree per party, automatic
  depth capped at 8, 20 bins, merged and pooled by the library: the setting of
  ``bench_federation_cost.py``), and ``defaults, central``;
- ``mix, federated`` / ``mix, central``: each party (or the central holder)
  gives a fraction ρ of its rows to the marginals and the rest to the trees
  (``mix_rho`` of ``bench_marginals.py`` at the federation's size; parallel
  composition: ε-DP), the two pooled log-linearly with weights ρ and 1 − ρ.

Seeded research noise: NOT DP releases.

    python benchmarks/bench_marginals_federated.py            # about 10 minutes on one core

Output: ``results/marginals_federated.md`` (and ``.csv``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import DEFAULT_DATA_DIR, RESULTS_DIR, Split, make_split, party_rows
from _bench_datasets import load_any_dataset
from bench_feature_stumps import log_pool, scores
from bench_marginals import (
    MARGINALS_SHRINKAGE,
    marginal_terms,
    marginals_n_bins,
    mix_rho,
    noisy_marginals,
    softmax,
)

from edprf_core import EDPRFClassifier, merge_forests
from edprf_core._marginals import NoisyMarginals, marginals_temper
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

DATASETS = ("heart", "bank", "diabetes", "wall", "census", "credit")
EPSILONS = (0.5, 1.0, 2.0)
PARTITIONS = ("iid", "dirichlet-0.5")
N_PARTIES = 20
CSV = RESULTS_DIR / "marginals_federated.csv"


class Federation:
    """One seed's split, cut into parties, with every model of the benchmark at one ε."""

    def __init__(self, split: Split, partition: str, epsilon: float, seed: int) -> None:
        self.split, self.eps, self.seed = split, epsilon, seed
        schema = split.schema
        self.n, self.d, self.k = len(split.y_train), schema.n_features, schema.n_classes
        self.parties = party_rows(split, partition, N_PARTIES, seed)
        self.labels = encode_labels(split.y_train, schema)
        # which rows a holder gives to the marginals in the mix (public randomness, as in the mix of bench_marginals)
        self.rho = mix_rho(self.n, self.d, self.k, epsilon)
        self.to_marginals = np.random.default_rng(2000 + seed).random(self.n) < self.rho

    def _grid(self, n_rows: int) -> FeatureGrid:
        return FeatureGrid.from_schema(self.split.schema, n_bins=marginals_n_bins(n_rows, self.d, self.eps))

    def marginals(self, holders: list[np.ndarray], n_rows: int) -> np.ndarray:
        """Each holder releases its histograms at ε; the sums are post-processed at the noise level of the sum."""
        grid = self._grid(n_rows)
        codes = encode_features(self.split.X_train, self.split.schema, grid)
        test_codes = encode_features(self.split.X_test, self.split.schema, grid)
        released = [
            noisy_marginals(codes[rows], self.labels[rows], grid, self.k, self.eps, self.seed * 1000 + i)
            for i, rows in enumerate(holders)
        ]
        # the sum's noise is sqrt(P) times one release's: the estimator reads its noise scale from ``epsilon``, so the
        # sum is handed over at eps / sqrt(P) (a post-processing setting; the guarantee stays eps per record)
        summed = NoisyMarginals(
            tuple(np.sum([r.counts[j] for r in released], axis=0) for j in range(self.d)),
            epsilon=self.eps / np.sqrt(len(holders)),
            relation="add-remove",
            n_classes=self.k,
        )
        log_prior, evidence = marginal_terms(summed, test_codes, MARGINALS_SHRINKAGE)
        return softmax(log_prior + marginals_temper(self.d) * evidence)

    def trees(self, holders: list[np.ndarray]) -> np.ndarray:
        """Today's federation: one tree per holder (the setting of ``bench_federation_cost.py``), merged."""
        s = self.split
        forests, names = [], []
        for i, rows in enumerate(holders):
            if len(rows) == 0:
                continue
            clf = EDPRFClassifier(
                s.schema,
                epsilon=self.eps,
                n_trees=1,
                max_depth="auto",
                max_depth_cap=8,
                n_bins=20,
                random_state=self.seed * 1000 + i,
                marginals_share=0.0,
            ).fit(s.X_train.iloc[rows], s.y_train.iloc[rows])
            forests.append(clf.forest_)
            names.append(f"p{i}")
        return merge_forests(forests, labels=names).predict_proba(s.X_test)

    def defaults_central(self, rows: np.ndarray | None = None) -> np.ndarray:
        s = self.split
        rows = np.arange(self.n) if rows is None else rows
        model = EDPRFClassifier(s.schema, epsilon=self.eps, random_state=self.seed, marginals_share=0.0)
        return model.fit(s.X_train.iloc[rows], s.y_train.iloc[rows]).predict_proba(s.X_test)

    def models(self) -> dict[str, np.ndarray]:
        everyone = np.arange(self.n)
        mine = [rows[self.to_marginals[rows]] for rows in self.parties]
        theirs = [rows[~self.to_marginals[rows]] for rows in self.parties]
        out = {
            "marginals, central": self.marginals([everyone], self.n),
            "marginals, federated": self.marginals(self.parties, self.n),
            "defaults, central": self.defaults_central(),
            "trees, federated": self.trees(self.parties),
        }
        n_marg = int(self.to_marginals.sum())
        central_mix = [
            (self.rho, self.marginals([np.flatnonzero(self.to_marginals)], n_marg)),
            (1 - self.rho, self.defaults_central(np.flatnonzero(~self.to_marginals))),
        ]
        federated_mix = [(self.rho, self.marginals(mine, n_marg)), (1 - self.rho, self.trees(theirs))]
        out["mix, central"] = log_pool(central_mix)
        out["mix, federated"] = log_pool(federated_mix)
        return out


def run(name: str, seeds: int, data_dir: str) -> pd.DataFrame:
    X, y, schema = load_any_dataset(name, data_dir)
    rows = []
    for seed in range(seeds):
        split = make_split(X, y, schema, seed, dataset=name)
        truth = encode_labels(split.y_test, schema)
        for partition in PARTITIONS:
            for eps in EPSILONS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    models = Federation(split, partition, eps, seed).models()
                for model, proba in models.items():
                    acc, auc = scores(proba, truth)
                    rows.append(
                        {
                            "dataset": name,
                            "partition": partition,
                            "epsilon": eps,
                            "seed": seed,
                            "model": model,
                            "accuracy": acc,
                            "auc": auc,
                        }
                    )
        print(f"{name}: seed {seed} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


READING = [
    "",
    "Reading (the numbers are this file's):",
    "",
    (
        "- **Label skew does not enter the marginals.** Their federated rows are the same under IID and Dirichlet 0.5: "
        "the coordinator's sum is the histogram of all rows whatever the partition; only the noise grows, sqrt(20) "
        "≈ 4.5 times a central release's."
    ),
    (
        "- **Within 2 points under Dirichlet 0.5** (accuracy): the marginals on bank, census and credit at every ε "
        "and on diabetes at ε ≥ 1; the mix on bank, census and credit at every ε (credit −2.0 at ε = 1) and on "
        "diabetes at ε ≥ 1; today's trees on bank, credit and diabetes at every ε and on census at ε ≥ 1."
    ),
    (
        "- **Not within 2 points**: heart (237 training rows, about 12 per party: −13 to −17 points for every model) "
        "and wall robot (the trees −13 to −20; the marginals, weak on wall centrally, −0.3 to −12). A party with "
        "a dozen rows cannot release anything useful under pure ε-DP on its own."
    ),
    (
        "- **What would close it for the marginals**: they are a sum, so a secure aggregation of the parties' "
        "histograms with one (distributed) noise draw would give the coordinator the central model itself. "
        "That is a protocol change (issue 23's note on `federation_depth.md` reaches the same conclusion for the "
        "trees' splits), not done here."
    ),
]
PAIRS = (("marginals, federated", "marginals, central"), ("mix, federated", "mix, central"))
TODAY = ("trees, federated", "defaults, central")


def report(table: pd.DataFrame, seeds: int) -> str:
    mean = table.groupby(["dataset", "partition", "epsilon", "model"]).agg(
        accuracy=("accuracy", "mean"), auc=("auc", "mean")
    )
    lines = [
        "# Do the DP marginals federate? (issue 23)",
        "",
        (
            f"Command: `python benchmarks/bench_marginals_federated.py --seeds {seeds}`. What and why: its docstring. "
            f"{N_PARTIES} parties, means over seeds 0..{seeds - 1}; accuracy in points, gap = federated − central "
            "(issue 23's goal: within 2 points under Dirichlet 0.5). Seeded research noise, not DP releases."
        ),
        "",
        (
            "| dataset | partition | ε | marginals fed. / central | gap | mix fed. / central | gap | "
            "trees fed. / defaults central (today) | gap |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, partition, eps), group in mean.groupby(level=[0, 1, 2], sort=False):
        group = group.droplevel([0, 1, 2])
        cells = []
        for fed, central in (*PAIRS, TODAY):
            a, b = 100 * group.loc[fed].accuracy, 100 * group.loc[central].accuracy
            cells += [
                f"{a:.1f} / {b:.1f} (AUC {group.loc[fed].auc:.3f} / {group.loc[central].auc:.3f})",
                f"{a - b:+.1f}",
            ]
        lines.append(f"| {name} | {partition} | {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines + READING) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--out", default=str(RESULTS_DIR / "marginals_federated.md"))
    args = parser.parse_args()
    table = pd.concat([run(name, args.seeds, args.data_dir) for name in args.datasets.split(",")], ignore_index=True)
    table.to_csv(Path(args.out).with_suffix(".csv"), index=False, float_format="%.6f")
    text = report(table, args.seeds)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
