#!/usr/bin/env bash
# Rewrite constraints.txt from the packages of .venv (after verifying that .venv passes .ci/run):
# its header comment is kept, every pin below it is the version .venv holds.
set -euo pipefail
cd "$(dirname "$0")/.."
header=$(sed -n '/^#/!q;p' constraints.txt)
{
    printf '%s\n' "$header"
    .venv/bin/python -m pip freeze --exclude-editable | grep -v -e '^#' -e '^edprf-fl' -e ' @ file:'
} >constraints.txt.new
mv constraints.txt.new constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) pins from .venv"
