"""Using a model needs no Flower: predict, evaluate and load_classifier run with flwr and ray made unimportable.

Each check runs in a fresh interpreter whose ``sys.meta_path`` refuses ``flwr`` and ``ray`` (what a slim
install, ``pip install .`` without extras, looks like); CI also runs them in a venv without Flower.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BLOCKER = """
import importlib.abc, sys

class NoFederation(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("flwr", "ray"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoFederation())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )


def test_predict_and_evaluate_run_without_flower(bank_model, tmp_path):
    out = tmp_path / "predictions.csv"
    code = f"""
from edprf_fl.cli import main
assert main(["predict", {str(bank_model["model"])!r}, {str(bank_model["data"])!r}, "-o", {str(out)!r},
             "--keys", {str(bank_model["keys"])!r}]) == 0
assert main(["evaluate", {str(bank_model["model"])!r}, {str(bank_model["data"])!r}, "--positive-class", "yes"]) == 0
from protocol import load_classifier
clf = load_classifier({str(bank_model["model"])!r}, keys_dir={str(bank_model["keys"])!r})
assert clf.provenance.verified
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("flwr", "ray"))
assert not loaded, loaded
print("ok")
"""
    result = _run(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
    assert len(out.read_text().splitlines()) == 1 + len(bank_model["data"].read_text().splitlines()) - 1


def test_a_federation_command_names_the_extra_in_one_line():
    result = _run("from edprf_fl.cli import main\nraise SystemExit(main(['simulate', '--no-baselines']))")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "edprf simulate: error: this command runs a federation and needs Flower (flwr is not installed): "
        "pip install 'edprf-fl[federation]'"
    )
