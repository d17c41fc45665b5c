"""`edprf simulate`'s baselines against the federation: fitted on as many rows as the parties train on, and said so.

Researcher's review: the central and party-alone baselines fitted on every party row, while each party trains on
its rows less its held-out share (``--party-holdout``, 10% by default), so "the cost of federating against
central DP" was biased in central's favour by about 11% more rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from edprf_core import EDPRFClassifier
from edprf_fl.simulation import SimulationSettings, prepare_workspace, results_table, train_baselines


@pytest.fixture
def fitted_rows(monkeypatch):
    """The number of rows of every EDPRFClassifier fit, in order."""
    sizes: list[int] = []
    fit = EDPRFClassifier.fit

    def counted(self, X, y, *args, **kwargs):
        sizes.append(len(X))
        return fit(self, X, y, *args, **kwargs)

    monkeypatch.setattr(EDPRFClassifier, "fit", counted)
    return sizes


def test_the_baselines_fit_on_as_many_rows_as_the_parties_train_on(tmp_path, fitted_rows):
    settings = SimulationSettings(parties=3, max_depth=3, party_holdout=0.1, seed=4)
    workspace = prepare_workspace(settings, tmp_path)
    all_rows = sum(map(len, workspace.parts))
    baselines = train_baselines(settings, workspace)
    consortium = workspace.config.consortium_rows
    assert consortium == round(all_rows * 0.9) < all_rows
    central = fitted_rows[:5]  # the central model's noise draws come first
    assert central == [consortium] * 5, (central, all_rows)
    party_rows = [round(len(rows) * 0.9) for rows in workspace.parts]
    assert fitted_rows[5:] == party_rows * 5  # each party alone, every draw
    for key in ("central_edprf", "non_private_rf", "majority_class"):
        assert baselines[key]["training_rows"] == consortium
    for key in ("party_alone_median", "party_alone_best"):
        assert baselines[key]["training_rows"] in party_rows


def _workspace(parts, sim_dir):
    """What :func:`baseline_rows` reads of a workspace: the parts, and where the parties' ledgers are."""
    from types import SimpleNamespace

    from edprf_core import load_embedded

    X, y, schema = load_embedded("wall_robot_navigation")
    return SimpleNamespace(
        parts=parts, config=SimpleNamespace(sim_dir=str(sim_dir)), schema=schema, X_train=X, y_train=y
    )


def test_without_a_hold_out_the_baselines_fit_on_every_row(tmp_path):
    from edprf_fl.simulation._baselines import baseline_rows

    settings = SimulationSettings(party_holdout=0.0)
    parts = [np.array([5, 1, 3]), np.array([0, 4]), np.array([2])]
    pooled, alone, same = baseline_rows(settings, _workspace(parts, tmp_path))
    assert pooled.tolist() == [0, 1, 2, 3, 4, 5] and same
    assert [a.tolist() for a in alone] == [p.tolist() for p in parts]  # a party's rows in its own order


def test_a_party_without_a_key_is_stood_in_for_by_a_seeded_sample(tmp_path):
    """A party that never trained drew no salt: its rows cannot be taken again, so a seeded sample of as many."""
    from edprf_fl.simulation._baselines import baseline_rows

    settings = SimulationSettings(party_holdout=0.25, seed=3)
    rows = np.arange(400)
    iid = [rows[:200], rows[200:]]
    pooled, alone, same = baseline_rows(settings, _workspace(iid, tmp_path))
    assert not same
    assert len(pooled) == 300 and len(set(pooled.tolist())) == 300 and np.all(np.diff(pooled) > 0)
    assert [len(a) for a in alone] == [150, 150] and all(np.isin(a, p).all() for a, p in zip(alone, iid))
    assert baseline_rows(settings, _workspace(iid, tmp_path))[0].tolist() == pooled.tolist()  # seeded
    other = SimulationSettings(party_holdout=0.25, seed=4)
    assert baseline_rows(other, _workspace(iid, tmp_path))[0].tolist() != pooled.tolist()


@pytest.mark.parametrize("seeded", [False, True])
def test_after_the_federation_the_baselines_fit_on_the_rows_each_party_trained_on(tmp_path, seeded):
    """Carried from the simulation review: the baselines fitted on a seeded sample of as many rows as the parties
    trained on, not the same rows, which added sampling noise to every "cost of federating" comparison.  After
    the run each party's side of every row is taken again with its own key: exactly the rows its own reader kept
    for training from its data.csv (a party's salt drawn by itself, or written by a --seeded-noise run)."""
    from client import HOLDOUT_SALT_KEY, read_meta_readonly
    from client._local_data import load_local_data
    from edprf_fl.simulation import simulate_federation
    from edprf_fl.simulation._baselines import baseline_rows

    settings = SimulationSettings(parties=3, max_depth=2, party_holdout=0.2, seed=5, seeded_noise=seeded)
    workspace = prepare_workspace(settings, tmp_path)
    simulate_federation(workspace.config, settings.parties)
    pooled, alone, same = baseline_rows(settings, workspace)
    assert same
    for p, (rows, kept) in enumerate(zip(workspace.parts, alone)):
        party = tmp_path / "workspace" / f"party-{p:04d}"
        salt = read_meta_readonly(party / "ledger.sqlite", (HOLDOUT_SALT_KEY,))[HOLDOUT_SALT_KEY]
        data = load_local_data(party / "data.csv", workspace.schema, 0.2, salt)
        trained = rows[data.X_train.index.to_numpy()]  # the party's own reader: positions in its data.csv
        assert kept.tolist() == trained.tolist() and 0 < len(kept) < len(rows)
    assert pooled.tolist() == sorted(np.concatenate(alone).tolist())
    baselines = train_baselines(settings, workspace)
    assert all(b["same_rows"] for b in baselines.values())
    assert baselines["central_edprf"]["training_rows"] == len(pooled)
    federated = {"central_evaluation": {"accuracy": 0.9, "n": 10}, "n_trees": 3, "parameters": {"consortium_rows": 1}}
    assert "the baselines fit on the rows the parties trained on" in results_table(
        federated, baselines, party_holdout=0.2
    )


def test_the_table_shows_the_rows_each_model_was_fitted_on():
    metrics = {"accuracy": 0.9, "n": 100}
    federated = {"central_evaluation": metrics, "n_trees": 3, "parameters": {"consortium_rows": 3534}}
    baselines = {
        "central_edprf": metrics | {"n_trees": 1, "training_rows": 3534},
        "party_alone_median": metrics | {"n_trees": 1, "training_rows": 707},
    }
    table = results_table(federated, baselines, party_holdout=0.1)
    assert "| model | trees | training rows | accuracy |" in table
    assert "| federated eDPRF | 3 | ~3534 | 0.9000" in table
    assert "| central eDPRF (pooled rows; needs a trusted curator) | 1 | 3534 | 0.9000" in table
    assert "| each party alone: median party | 1 | 707 | 0.9000" in table
    assert "kept back whether or not the evaluation round runs" in table
    assert "each baseline fits on as many rows as the parties train on" in table and "not the same rows" in table
    exact = results_table(federated, baselines, party_holdout=0.0)
    assert "| federated eDPRF | 3 | 3534 |" in exact and "no hold-out" in exact
    # the simulation read every party's key: the federation's count is the exact one the pooled baselines fit on,
    # not an expected '~' count beside them that read as fewer rows (review rev-research R6)
    same = {
        k: b | {"same_rows": True, "training_rows": 3578 if k == "central_edprf" else 707} for k, b in baselines.items()
    }
    table = results_table(federated, same, party_holdout=0.1)
    assert "| federated eDPRF | 3 | 3578 | 0.9000" in table and "~" not in table
    assert "the federation's count is that exact one" in table


def test_the_best_party_alone_says_it_was_chosen_on_the_test_rows():
    """Review: the best party is picked by its accuracy on the rows it is then scored on, an optimistic figure."""
    from edprf_fl.simulation import cost_lines

    metrics = {"accuracy": 0.8, "roc_auc": 0.9, "n": 100}
    federated = {"central_evaluation": metrics, "n_trees": 3}
    baselines = {"party_alone_best": {"accuracy": 0.85, "roc_auc": 0.88, "n_trees": 1}}
    table = results_table(federated, baselines)
    assert "| each party alone: best party (chosen on the test rows: optimistic) | 1 |" in table
    [line] = [line for line in cost_lines(federated, baselines) if "best party" in line]
    assert "against the best party alone (chosen on the test rows: optimistic): -5.0 points" in line


def test_a_drafted_schema_is_warned_of_once_for_all_the_baseline_fits(tmp_path):
    """Review: `edprf simulate --schema drafted.schema.toml` printed the DraftedSchemaWarning once per baseline fit
    (30 stderr lines); the run's first line and guarantee say it too."""
    import warnings

    from edprf_core import PrivacyLeakWarning, draft_schema, load_embedded
    from edprf_core.schema import DraftedSchemaWarning

    X, y, schema = load_embedded("wall_robot_navigation")
    frame = X.assign(**{schema.label.column: y})
    frame.to_csv(tmp_path / "wall.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        draft_schema(frame, schema.label.column).save(tmp_path / "drafted.toml")
    settings = SimulationSettings(
        data=tmp_path / "wall.csv", schema=tmp_path / "drafted.toml", parties=2, max_depth=2, n_bins=8
    )
    workspace = prepare_workspace(settings, tmp_path / "run")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_baselines(settings, workspace)
    drafted = [w for w in caught if issubclass(w.category, DraftedSchemaWarning)]
    assert len(drafted) == 1, [str(w.message) for w in drafted]
    assert "the baselines fit on a drafted schema" in str(drafted[0].message)


def test_the_residual_pass_footnote_only_where_a_row_carries_it():
    """The numbers audit: `simulate --no-baselines` explained "+ pass" under a table where no row had it."""
    metrics = {"accuracy": 0.9, "n": 100}
    federated = {"central_evaluation": metrics, "n_trees": 3, "marginals": {"share": 0.9}}
    alone = results_table(federated, None)
    assert "trees + marginals:" in alone and "+ pass" not in alone
    central = {"central_edprf": metrics | {"n_trees": 1, "marginals_share": 0.9, "residual_pass": True}}
    with_pass = results_table(federated, central)
    assert "| 1 + marginals (90 % of rows) + pass |" in with_pass and "; + pass: one residual pass" in with_pass
