#!/usr/bin/env bash
# Point the venv's Jupyter at the prebuilt notebook extension of this checkout. A wheel installs
# it as data files; an editable install (`pip install -e`) does not, so link it as
# `jupyter labextension develop` would.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-.venv/bin/python}
prefix=$("$PYTHON" -c 'import sys; print(sys.prefix)')
mkdir -p "$prefix/share/jupyter/labextensions"
ln -sfn "$PWD/codingcode_jupyter/labextension" "$prefix/share/jupyter/labextensions/codingcode-jupyter"
