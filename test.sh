#!/usr/bin/env bash
# The test suite: set up a virtualenv (once), install edprf-fl with its test
# extras, run pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/ensure-venv.sh
ensure_venv "federation,test,dev" "edprf_core flwr pytest xdist pytest_timeout hypothesis scipy grpc_tools"
export PATH="$PWD/.venv/bin:$PATH"
# The suite starts hundreds of Python processes that import this package (Flower's ClientApps and ServerApps
# from each test's app bundle, `edprf` commands): with PYTHONDONTWRITEBYTECODE set (some CI images set it) each
# compiled the package's sources again, up to about 1 s of CPU a process.  Python's default here: the first writes
# __pycache__ (the checkout's is git-ignored; a bundle's sits in the test's tmp_path), the others read it.
unset PYTHONDONTWRITEBYTECODE
# Two workers (pytest-xdist); every test, the real Flower and Ray ones too, keeps its processes, ports
# (free_port) and Flower home under its own tmp_path.  `-n 0` runs in this process (pdb, -s).
# A worker takes a whole module at a time, the longest modules first (tests/_module_order.py): both
# workers then finish together.
exec .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
