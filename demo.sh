#!/usr/bin/env bash
# The main job: set up a virtualenv (once), install edprf-fl, run the default job
# (a simulated federation of 5 parties on the embedded dataset). Extra arguments go
# to `edprf simulate`.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import edprf_core, flwr" >/dev/null 2>&1 || [ pyproject.toml -nt .venv/.installed ]; then
    echo "installing edprf-fl into .venv (first run only) ..." >&2
    .venv/bin/python -m pip install --quiet --upgrade pip >&2
    .venv/bin/python -m pip install --quiet -e . >&2
    touch .venv/.installed
fi
exec .venv/bin/edprf simulate "$@"
