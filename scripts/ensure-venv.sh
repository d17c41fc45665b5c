# Sourced by demo.sh and test.sh: create .venv/ once and (re)install edprf-fl, with the versions of
# constraints.txt, when pyproject.toml or constraints.txt changed or an import is missing.
#   ensure_venv EXTRAS "module module ..."
ensure_venv() {
    local extras="$1" modules="$2" stamp=".venv/.installed${1:+-${1//,/-}}"
    local python="${PYTHON:-python3.11}"
    command -v "$python" >/dev/null 2>&1 || python=python3
    [ -x .venv/bin/python ] || "$python" -m venv .venv
    local check="import ${modules// /, }"
    if ! .venv/bin/python -c "$check" >/dev/null 2>&1 || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
        local started=$SECONDS
        echo "installing edprf-fl${extras:+ with [$extras]} into .venv (the first time about 1-3 minutes;" \
            "later runs skip this) ..." >&2
        .venv/bin/python -m pip install --quiet --upgrade pip==26.3 >&2
        # setuptools' "Editable installation" notice (a box about same-named folders: ours are the packages) is noise
        PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
            .venv/bin/python -m pip install --quiet -c constraints.txt -e ".${extras:+[$extras]}" >&2
        touch "$stamp"
        echo "installed in $((SECONDS - started)) s" >&2
    fi
}
