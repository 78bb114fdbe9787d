# Sourced by .ci/run and bench.sh: make (or reuse) the project's virtual environment in $1 and activate it.
# Works on a stock Debian/Ubuntu python3, where pip refuses to install outside a venv (PEP 668) and where
# `python3 -m venv` fails without the python3-venv package (no ensurepip): then the venv is made without pip
# and the system's pip installs pip into it. PYTHON picks the interpreter (default python3).
project_venv() {
    local dir=$1 py=${PYTHON:-python3}
    if ! command -v "$py" >/dev/null 2>&1; then
        echo "error: $py not found: install Python 3.10 or newer (Debian/Ubuntu: sudo apt install python3)" >&2
        return 1
    fi
    if ! "$dir/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$dir"
        if ! "$py" -m venv "$dir" >/dev/null 2>&1; then
            rm -rf "$dir"
            if ! { "$py" -m venv --without-pip "$dir" && "$py" -m pip --version >/dev/null 2>&1 &&
                   "$py" -m pip --python "$dir/bin/python" install -q pip; }; then
                rm -rf "$dir"
                echo "error: $py cannot make a virtual environment (no ensurepip, and no pip to bootstrap one)." >&2
                echo "  Debian/Ubuntu: sudo apt install python3-venv   (or python3-pip), then run this again." >&2
                return 1
            fi
        fi
    fi
    # shellcheck disable=SC1091
    . "$dir/bin/activate"
}
