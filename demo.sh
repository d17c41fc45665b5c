#!/usr/bin/env bash
# The main job: set up a virtualenv (once), install edprf-fl, run the default job
# (a simulated federation of 5 parties on the embedded dataset). Extra arguments go
# to `edprf simulate`.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/ensure-venv.sh
ensure_venv "federation" "edprf_core flwr"
exec .venv/bin/edprf simulate "$@"
