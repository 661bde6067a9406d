#!/usr/bin/env bash
# Install everything (a venv with the project and JupyterLab) and open the quickstart notebook.
# The notebook works with no API key: the offline demo model plays a session on a sample project.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[lab]'
# pip writes an installed package's bytecode at install time, but an editable one only on
# first import, which PYTHONDONTWRITEBYTECODE (set on some machines) forbids: every kernel
# would then compile the whole package again. Write it here, as pip would.
.venv/bin/python -m compileall -q codingcode_jupyter >/dev/null
# The notebook extension ships prebuilt in the package; an editable install needs it linked.
bash scripts/link_frontend.sh .venv/bin/python

args=()
# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
[ "$(id -u)" = 0 ] && args+=(--allow-root)
exec .venv/bin/jupyter lab "${args[@]}" "$@" notebooks/quickstart.ipynb
