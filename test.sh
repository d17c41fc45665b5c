#!/usr/bin/env bash
# The test suite: set up a virtualenv (once), install edprf-fl with its test
# extras, run pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import edprf_core, flwr, pytest, hypothesis, scipy" >/dev/null 2>&1 \
        || [ pyproject.toml -nt .venv/.installed-test ]; then
    echo "installing edprf-fl with test extras into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --upgrade pip >&2
    .venv/bin/python -m pip install --quiet -e ".[test,dev]" >&2
    touch .venv/.installed .venv/.installed-test
fi
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
