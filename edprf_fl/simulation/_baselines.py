"""The models a simulated federation is compared with: central DP, each party alone, non-private, majority."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edprf_core.count_text import count_text

from ._progress import Progress, Throttle, _quiet, stage

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from edprf_core import Schema

    from ._prepare import PreparedWorkspace
    from ._settings import SimulationSettings

__all__ = ["BASELINE_DRAWS", "PARTY_ALONE_FITS", "baseline_rows", "raw_features", "train_baselines"]

BASELINE_DRAWS = 5
"""Draws of the central DP baseline's noise (research seeds): its row is the draw of median accuracy, and the
spread of the draws says how far one draw of noise moves it.  Five central fits take about 0.2 s on the
embedded data."""

PARTY_ALONE_FITS = 100
"""At most this many fits for the each-party-alone rows (parties x draws), at least one draw."""

_RF_TREES, _RF_BATCH = 100, 10
"""Trees of the non-private reference forest, and how many are grown between two looks at the progress clock."""

_DRAW_STRIDE = 104_729  # a draw's seed offset (a prime far from the parties' stride)

_SAMPLE_STREAM = 0xBA5E
"""Second word of the baselines' row sample's seed (``[seed, _SAMPLE_STREAM]``): a stream of its own, apart from
the split's, the partition's and the noise draws'."""


def train_baselines(
    settings: SimulationSettings, workspace: PreparedWorkspace, progress: Progress = _quiet
) -> dict[str, dict[str, Any]]:
    """Metrics on the central test rows of the models the federation is compared with.

    ``central_edprf``: a central DP model a trusted curator could fit on the pooled rows;
    ``party_alone_median`` / ``party_alone_best``: each party alone, with the federation's request (the best
    party is chosen by its accuracy on the test rows it is scored on: an optimistic figure);
    ``non_private_rf``: scikit-learn's forest on the raw features; ``majority_class``: the prior.
    Each entry also holds ``n_trees`` (the central model ``max_depth`` too) and ``training_rows``, and the
    eDPRF ones ``marginals_share`` and ``residual_pass``.  Research seeds throughout
    (``settings.seed``): a comparison, never a release.

    The eDPRF baselines' settings: the federation's ``epsilon``, ``leaf``, ``split_mode`` and ``n_bins`` (a
    federated setting, 20 by default: not the estimator's ``"auto"``); with ``max_depth="auto"`` the central model
    takes the estimator's own choice of trees and depth (``n_trees="auto"``, ``max_depth="auto"``: one tree of
    depth 6 on the embedded data at epsilon 1), with a fixed depth ``parties x n_trees`` trees of that depth (the
    federation's forest); each party alone ``n_trees`` trees, of the fixed depth or its own automatic one; the
    marginals share and the residual pass are the estimator's own choice.

    On a drafted schema, one :class:`~edprf_core.schema.DraftedSchemaWarning` for all the fits.

    Every baseline fits on the rows the parties trained on (:func:`baseline_rows`): a party trains on its rows
    less its held-out share (``settings.party_holdout``, chosen by a keyed hash with the party's own secret salt),
    and after the federation the simulation reads each party's salt from its ledger in the workspace (its own
    files) and takes the same side of every row; the central, non-private and majority baselines fit on all the
    parties' training rows pooled, each party alone on its own.  A party that never drew its salt (it refused,
    say) is stood in for by a seeded sample of as many of its rows; each entry's ``same_rows`` says whether
    every party's rows were its own.

    The DP baselines are drawn several times (:data:`BASELINE_DRAWS` noise draws of the central model,
    :func:`party_alone_draws` of every party's): each entry is the draw of median accuracy, with
    ``draws``, ``accuracy_draws`` and ``roc_auc_draws``, so a comparison with the federated model (one
    draw of its parties' noise) can say how far noise alone moves a baseline.

    ``progress`` receives a line as each baseline starts, its duration when done, and, every
    :data:`~edprf_fl.simulation._progress.PROGRESS_EVERY` seconds at most, how many of its fits are done.
    """
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    from edprf_core import EDPRFClassifier, SeededNoiseWarning
    from edprf_core.encoding import encode_labels, labels_read_by_caller
    from edprf_core.schema import DraftedSchemaWarning
    from server import classification_metrics, forest_metrics

    schema, X_train, y_train = workspace.schema, workspace.X_train, workspace.y_train
    X_test, y_test = workspace.X_test, workspace.y_test
    pooled, parts, same_rows = baseline_rows(settings, workspace)
    n_trees = settings.parties * settings.n_trees
    auto, leaf = settings.auto_depth, settings.leaf
    if schema.is_draft:  # once per run, not once per fit (the 30 fits said it 30 times); the guarantee says it too
        warnings.warn(
            f"the baselines fit on a drafted schema ({schema.name!r}, {schema.draft_note}): its bounds and categories "
            "were read from the data, so these models, like the federated one, are NOT differentially private",
            DraftedSchemaWarning,
            stacklevel=2,
        )

    def fitted(rows: np.ndarray, trees: int | str, seed: int) -> EDPRFClassifier:
        model = EDPRFClassifier(
            schema,
            epsilon=settings.epsilon,
            n_trees=trees,
            max_depth="auto" if auto else settings.max_depth,
            leaf=leaf,
            n_bins=settings.n_bins,
            split_mode=settings.split_mode,
            random_state=seed,
        )
        with warnings.catch_warnings():  # seeded on purpose: the baselines are research references, said so
            warnings.simplefilter("ignore", SeededNoiseWarning)
            warnings.simplefilter("ignore", DraftedSchemaWarning)  # said once per run, above
            with labels_read_by_caller():  # scored by forest_metrics, which reads labels by the schema
                return model.fit(X_train.iloc[rows], y_train.iloc[rows])

    def metrics_of(model: EDPRFClassifier, **extra: Any) -> dict[str, Any]:
        return forest_metrics(model.forest_, X_test, y_test) | {
            "marginals_share": model.marginals_share_,
            "residual_pass": bool(model.residual_pass_),
            **extra,
        }

    # the central DP model a trusted curator could fit on the pooled rows (automatic depth: the estimator's own
    # trees and depth; a fixed depth: the federation's trees; the federation's bins either way), over several
    # draws of its noise: one draw alone can land a few points either side of the federated model's
    central = []
    trees_text = "the estimator's own trees" if auto else count_text(n_trees, "tree")
    with stage(
        progress, f"      central eDPRF: {BASELINE_DRAWS} draws, {trees_text} on {count_text(len(pooled), 'row')} ..."
    ):
        throttle = Throttle(progress)
        for k in range(BASELINE_DRAWS):
            model = fitted(pooled, "auto" if auto else n_trees, settings.seed + _DRAW_STRIDE * k)
            central.append(
                metrics_of(model, n_trees=model.n_trees_, max_depth=model.max_depth_, training_rows=len(pooled))
            )
            throttle.tick(lambda: f"      fitted {len(central)} of {BASELINE_DRAWS} central draws")
    out = {"central_edprf": _median_draw(central)}
    # each party alone: what a party gets without the consortium (same request, its own rows only); the median
    # and the best party of each draw of every party's noise (the best by accuracy on the test rows it is scored
    # on: optimistic, and labelled so)
    medians, bests = [], []
    draws, holding = party_alone_draws(settings.parties), sum(1 for rows in parts if len(rows))
    fits, done = draws * holding, 0
    each = f"{count_text(holding, 'party', 'parties')} x {count_text(draws, 'draw')}"
    with stage(progress, f"      each party alone: {count_text(fits, 'fit')} ({each}) ..."):
        throttle = Throttle(progress)
        for k in range(draws):
            alone = []
            for i, rows in enumerate(parts):
                if not len(rows):
                    continue
                model = fitted(rows, settings.n_trees, _party_seed(settings.seed, i, k))
                alone.append(metrics_of(model, n_trees=settings.n_trees, training_rows=len(rows)))
                done += 1
                throttle.tick(lambda done=done: f"      fitted {done} of {fits} party-alone models")
            if alone:
                by_accuracy = sorted(alone, key=lambda m: m["accuracy"])
                medians.append(by_accuracy[(len(by_accuracy) - 1) // 2])
                bests.append(by_accuracy[-1])
    if medians:
        out["party_alone_median"] = _median_draw(medians)
        out["party_alone_best"] = _median_draw(bests)
    classes = np.asarray(schema.classes)
    y_true = classes[encode_labels(y_test, schema)]
    # all cores: the trees are the same whatever n_jobs (their seeds are drawn first), only built at once
    # grown _RF_BATCH trees at a time (warm start: the same trees as one fit, their seeds drawn in the same
    # order), so that a count line can say how far it is
    rf = RandomForestClassifier(n_estimators=_RF_BATCH, random_state=settings.seed, n_jobs=-1, warm_start=True)
    with stage(progress, f"      non-private forest: {_RF_TREES} trees on {count_text(len(pooled), 'row')} ..."):
        features, codes = raw_features(X_train.iloc[pooled], schema), encode_labels(y_train.iloc[pooled], schema)
        throttle = Throttle(progress)
        for grown in range(_RF_BATCH, _RF_TREES + 1, _RF_BATCH):
            rf.set_params(n_estimators=grown)
            rf.fit(features, codes)
            throttle.tick(lambda grown=grown: f"      grown {grown} of {_RF_TREES} trees")
        proba = np.zeros((len(X_test), len(classes)))
        proba[:, rf.classes_] = rf.predict_proba(raw_features(X_test, schema))
    out["non_private_rf"] = classification_metrics(y_true, proba, classes) | {
        "n_trees": _RF_TREES,
        "training_rows": len(pooled),
    }
    majority = np.bincount(encode_labels(y_train.iloc[pooled], schema), minlength=len(classes)).astype(float)
    prior = np.tile(majority / majority.sum(), (len(X_test), 1))
    out["majority_class"] = classification_metrics(y_true, prior, classes) | {
        "n_trees": 0,
        "training_rows": len(pooled),
    }
    for entry in out.values():
        entry["same_rows"] = same_rows
    return out


def baseline_rows(
    settings: SimulationSettings, workspace: PreparedWorkspace
) -> tuple[np.ndarray, list[np.ndarray], bool]:
    """The rows the baselines fit on: those the parties trained on.

    A party trains on its rows less those its keyed hash holds out (``settings.party_holdout`` of them, keyed
    with the party's own secret salt, :func:`client.held_out_rows`).  After the federation the salt is in the
    party's ledger in the workspace (the simulation's own files; a ``--seeded-noise`` run wrote it there
    itself), so each party's side of every row is taken again from its rows as the workspace holds them: the
    same readings the party hashed from its ``data.csv``.  A party whose ledger holds no salt (it never
    trained: refused, or no ledger) is stood in for by a seeded sample (``settings.seed``) of
    :func:`expected_training_rows` of its rows.  Without a hold-out, every row.

    Returns
    -------
    pooled : integer array
        Row positions of the pooled baselines' rows (every party's training rows), in increasing order.
    parts : list of integer arrays
        Each party's training rows, in the order the party holds them.
    same_rows : bool
        Whether every party's rows are the ones it trained on (no stand-in sample).
    """
    import numpy as np

    from client import HOLDOUT_SALT_KEY, held_out_rows, read_meta_readonly

    from ._prepare import expected_training_rows

    rng = np.random.default_rng([settings.seed, _SAMPLE_STREAM])
    holdout, schema, label = settings.party_holdout, workspace.schema, workspace.schema.label.column
    parts, same_rows = [], True
    for p, rows in enumerate(workspace.parts):
        rows = np.asarray(rows)
        if holdout <= 0 or not len(rows):
            parts.append(rows)
            continue
        ledger = Path(workspace.config.sim_dir) / f"party-{p:04d}" / "ledger.sqlite"
        salt = read_meta_readonly(ledger, (HOLDOUT_SALT_KEY,)).get(HOLDOUT_SALT_KEY) if ledger.is_file() else None
        if salt:
            frame = workspace.X_train.iloc[rows].assign(**{label: workspace.y_train.iloc[rows].to_numpy()})
            parts.append(rows[~held_out_rows(frame.reset_index(drop=True), schema, salt, holdout)])
            continue
        same_rows = False
        keep = min(len(rows), expected_training_rows(len(rows), holdout))
        parts.append(rows[np.sort(rng.choice(len(rows), size=keep, replace=False))])
    pooled = np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
    return pooled, parts, same_rows


def party_alone_draws(parties: int) -> int:
    """Draws of every party's noise for the each-party-alone rows: :data:`BASELINE_DRAWS`, fewer for many
    parties (at most :data:`PARTY_ALONE_FITS` fits), at least one."""
    return max(1, min(BASELINE_DRAWS, PARTY_ALONE_FITS // max(parties, 1)))


def _party_seed(seed: int, party: int, draw: int) -> int:
    """Party ``party``'s research seed in draw ``draw`` (draw 0: the seed the single-draw baseline used)."""
    return seed + 7919 * (party + 1) + _DRAW_STRIDE * draw


def _median_draw(draws: list[dict[str, Any]]) -> dict[str, Any]:
    """The draw of median accuracy (the lower one of an even count), with every draw's accuracy and ROC AUC."""
    chosen = sorted(draws, key=lambda m: m["accuracy"])[(len(draws) - 1) // 2]
    return chosen | {
        "draws": len(draws),
        "accuracy_draws": [m["accuracy"] for m in draws],
        "roc_auc_draws": [m.get("roc_auc") for m in draws],
    }


def raw_features(X: pd.DataFrame | np.ndarray, schema: Schema) -> np.ndarray:
    """Continuous columns as numbers (missing: NaN), categorical columns as the declared category's index.

    What the non-private reference forest sees: the features before any DP binning.
    """
    import numpy as np
    import pandas as pd

    from edprf_core import CategoricalFeature
    from edprf_core.encoding import FeatureGrid, encode_features

    grid = FeatureGrid.from_schema(schema, 2)
    codes = encode_features(X, schema, grid)
    out = np.empty(codes.shape, dtype=np.float64)
    for j, f in enumerate(schema.features):
        if isinstance(f, CategoricalFeature):
            out[:, j] = codes[:, j]
        else:
            out[:, j] = pd.to_numeric(
                pd.Series(np.asarray(X[f.name] if isinstance(X, pd.DataFrame) else X[:, j])), errors="coerce"
            ).to_numpy(dtype=np.float64)
    return out
