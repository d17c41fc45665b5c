"""Simulate a small federation on one machine: the parties' real ClientApps and the coordinator's ServerApp.

`edprf simulate` splits the embedded wall robot data among 3 parties, runs a training round in this process
(the in-process engine: no Ray, no socket), and writes the global model and the coordinator's report. Needs the
federation extra: pip install '.[federation]'.  Run: python examples/simulate_federation.py
"""

import json
import tempfile
from pathlib import Path

from edprf_core import load_embedded
from edprf_fl.cli import main
from protocol import load_classifier

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "run"
    status = main(["simulate", "--parties", "3", "--partition", "dirichlet", "--output", str(out), "--no-baselines"])
    assert status == 0, f"edprf simulate exited with {status}"

    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    print(
        f"\nrun {report['status']}; parties: {', '.join(p['party_id'] + ' ' + p['status'] for p in report['parties'])}"
    )
    print(report["guarantee"].split(". ")[0])

    # The global model is a file like any deployment's: load it as a scikit-learn classifier.
    clf = load_classifier(out / "global-model.edprf")
    X, _, _ = load_embedded("wall_robot_navigation")
    print(clf.predict(X[clf.feature_names_in_].head(5)))
