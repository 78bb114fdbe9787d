#!/usr/bin/env bash
# The main job: the CPU-vs-GPU benchmark (CPU only, with a note saying why, when there is no GPU).
# Makes .venv (a stock Debian/Ubuntu python3 refuses pip installs outside one), installs this checkout
# with the [bench] extra, and runs `python -m tensorlab.bench`. Arguments go to the benchmark
# (default --quick). TENSORLAB_EXTRA=cuda12 (or cuda13) adds CuPy for the GPU rows.
set -euo pipefail
cd "$(dirname "$0")"
. .ci/venv.sh
project_venv .venv
python -m pip install -q -e ".[bench${TENSORLAB_EXTRA:+,$TENSORLAB_EXTRA}]"
python -m tensorlab.bench "${@:---quick}"
