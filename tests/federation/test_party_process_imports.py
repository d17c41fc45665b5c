"""What one ClientApp process of a party imports to answer a message.

Flower 1.41 starts a fresh ``flwr-clientapp`` process for every message a party receives, and the readiness check
and training both load the exact samplers before anything is reserved.  ``import opendp.prelude`` pulled in
scikit-learn, SciPy (and pandas) through OpenDP's optional extras: about 3 s of CPU per message on a 2-core host,
for nothing a sampler uses (``edprf_core/_opendp_constructors.py``).  Checked in a fresh interpreter; no timing is
asserted (the CPU figures are in the closing note of stop 70).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import client.client_app
from edprf_core._sampler_check import load_exact_samplers
from edprf_core._count_noise import discrete_laplace_counts
from edprf_core._exact_selection import ExactPermuteAndFlip

load_exact_samplers()
released = discrete_laplace_counts([5, 0, 3], epsilon=1.0)
index = ExactPermuteAndFlip(sensitivity=2).select([[0.0, -3.0, -1.0]], 1.0)[0]
assert released.shape == (3,) and 0 <= int(index) < 3, (released, index)
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & {"sklearn", "scipy", "matplotlib", "ray", "onnx"})))
"""


def test_a_party_process_loads_and_draws_from_the_exact_samplers_without_scikit_learn_or_scipy():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [], f"a party's ClientApp process imported {result.stdout.strip()}"
