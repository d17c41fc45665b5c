"""edprf demo prints balanced accuracy and ROC AUC beside the majority baseline, and with --output DIR writes the DP
forest as a model file edprf predict reads, with the held-out rows, and prints the command (analyst review F14)."""

from __future__ import annotations

import os
import shlex
import stat

import pandas as pd

from edprf_fl.cli import main


def test_demo_judges_an_imbalanced_task_by_balanced_accuracy_and_auc_and_writes_a_model(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--dataset", "bank_marketing", "--seed", "3", "--output", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    balanced = next(line for line in lines if line.startswith("balanced accuracy:"))
    auc = next(line for line in lines if line.startswith("ROC AUC ('yes'):"))
    assert "DP forest 0." in balanced and "(95% CI" in balanced and "majority class 0.500" in balanced
    assert "DP forest 0." in auc and "(95% CI" in auc and "majority class 0.500" in auc
    assert any(line.startswith("note: 88% of the test rows are of one class") for line in lines)
    command = next(line for line in lines if line.startswith("try:")).removeprefix("try:").split()
    assert command[:2] == ["edprf", "predict"]
    assert main(command[1:]) == 0  # the printed command runs as printed
    predictions = pd.read_csv(shlex.split(" ".join(command))[-1])
    assert len(predictions) == len(pd.read_csv(out / "test.csv")) and predictions["p_yes"].notna().all()


def test_demo_refuses_an_existing_model_before_training(tmp_path, capsys):
    (tmp_path / "global-model.edprf").write_bytes(b"")
    assert main(["demo", "--dataset", "bank_marketing", "--output", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "global-model.edprf exists" in err and "[1/3]" not in err


def test_demo_writes_its_outputs_owner_only_whatever_the_umask(tmp_path, capsys):
    """Under umask 000 the directory (and a missing parent) is 0700 and both files 0600, as every other command's
    outputs: no other account may replace the model that edprf predict then reads (review rev-pkg P13)."""
    out = tmp_path / "parent" / "demo"
    old = os.umask(0)
    try:
        code = main(["demo", "--seed", "1", "--n-trees", "1", "--max-depth", "2", "--output", str(out)])
    finally:
        os.umask(old)
    assert code == 0, capsys.readouterr().err
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {
        "parent": 0o700,
        "parent/demo": 0o700,
        "parent/demo/global-model.edprf": 0o600,
        "parent/demo/test.csv": 0o600,
    }, {k: oct(v) for k, v in modes.items()}
    assert len(pd.read_csv(out / "test.csv")) > 0
