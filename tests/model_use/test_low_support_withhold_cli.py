"""predict --low-support withhold: no predicted class nor decision for a row of low support, its probabilities kept,
and the summary says how many were withheld and why; the default, score, writes them (analyst review F3 (c))."""

from __future__ import annotations

import pandas as pd

from edprf_fl.cli import main


def _predict(tmp_path, bank_model, name, *extra):
    out = tmp_path / name
    argv = ["predict", str(bank_model["model"]), str(bank_model["data"]), "-o", str(out), "--positive-class", "yes"]
    assert main([*argv, *extra]) == 0
    return pd.read_csv(out, keep_default_na=False)


def test_withhold_empties_the_decision_of_low_support_rows_only(tmp_path, capsys, bank_model):
    scored = _predict(tmp_path, bank_model, "score.csv")
    capsys.readouterr()
    held = _predict(tmp_path, bank_model, "held.csv", "--low-support", "withhold")
    err = " ".join(capsys.readouterr().err.split())
    low = held["support"].str.startswith("low").to_numpy()
    assert low.any() and not low.all()
    assert (scored.loc[low, "decision"] != "").all()  # the default writes them
    assert (held.loc[low, ["predicted", "decision"]] == "").all().all()
    pd.testing.assert_frame_equal(held.loc[~low], scored.loc[~low])  # the other rows unchanged
    pd.testing.assert_series_equal(held["p_yes"], scored["p_yes"])  # probabilities kept
    assert f"--low-support withhold: {int(low.sum())} rows of low support withheld: their predicted and decision" in err
