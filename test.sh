#!/usr/bin/env bash
# The test suite: set up a virtualenv (once), install edprf-fl with its test
# extras, run pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/ensure-venv.sh
ensure_venv "federation,test,dev" "edprf_core flwr pytest hypothesis scipy grpc_tools"
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
