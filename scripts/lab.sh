#!/usr/bin/env bash
# Install everything (a venv with the project and JupyterLab) and open the quickstart notebook.
# The notebook works with no API key: the offline demo model plays a session on a sample project.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[lab]'

args=()
# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
[ "$(id -u)" = 0 ] && args+=(--allow-root)
exec .venv/bin/jupyter lab "${args[@]}" "$@" notebooks/quickstart.ipynb
