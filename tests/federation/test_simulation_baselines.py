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


def test_without_a_hold_out_the_baselines_fit_on_every_row():
    from edprf_fl.simulation._baselines import baseline_rows

    settings = SimulationSettings(party_holdout=0.0)
    parts = [np.array([5, 1, 3]), np.array([0, 4]), np.array([2])]
    pooled, alone = baseline_rows(settings, parts)
    assert pooled.tolist() == [0, 1, 2, 3, 4, 5]
    assert [a.tolist() for a in alone] == [p.tolist() for p in parts]  # a party's rows in its own order


def test_the_pooled_sample_is_seeded_and_the_same_whatever_the_partition():
    from edprf_fl.simulation._baselines import baseline_rows

    settings = SimulationSettings(party_holdout=0.25, seed=3)
    rows = np.arange(400)
    iid = [rows[:200], rows[200:]]
    skewed = [rows[::3], np.setdiff1d(rows, rows[::3])]
    pooled, alone = baseline_rows(settings, iid)
    assert len(pooled) == 300 and len(set(pooled.tolist())) == 300 and np.all(np.diff(pooled) > 0)
    assert [len(a) for a in alone] == [150, 150] and all(np.isin(a, p).all() for a, p in zip(alone, iid))
    assert baseline_rows(settings, skewed)[0].tolist() == pooled.tolist()
    assert baseline_rows(settings, iid)[0].tolist() == pooled.tolist()  # seeded
    other = SimulationSettings(party_holdout=0.25, seed=4)
    assert baseline_rows(other, iid)[0].tolist() != pooled.tolist()


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
