#!/usr/bin/env bash
# Install everything (a venv with the project, JupyterLab, Notebook 7 and the test tools) and open
# JupyterLab on the quickstart notebook, with the whole repository browsable beside it.
# The notebook works with no API key: the offline demo model plays a session on a sample project.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# [test] as well as [lab]: after this, `.venv/bin/pytest tests/engine` runs (the README says so), and
# Notebook 7 (`.venv/bin/jupyter notebook`) is there beside JupyterLab.
.venv/bin/pip install -q --disable-pip-version-check -e '.[lab,test]'
# pip writes an installed package's bytecode at install time, but an editable one only on
# first import, which PYTHONDONTWRITEBYTECODE (set on some machines) forbids: every kernel
# would then compile the whole package again. Write it here, as pip would.
.venv/bin/python -m compileall -q codingcode_jupyter >/dev/null
# The notebook extension ships prebuilt in the package; an editable install needs it linked.
bash scripts/link_frontend.sh .venv/bin/python

args=()
# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
[ "$(id -u)" = 0 ] && args+=(--allow-root)
# Rooted at the repository (given a file alone, Jupyter roots at the file's directory, and the rest of
# the project could not be browsed); the quickstart opens at once.
exec .venv/bin/jupyter lab --ServerApp.root_dir="$PWD" "${args[@]}" "$@" notebooks/quickstart.ipynb
