#!/usr/bin/env bash
# Build the notebook extension from frontend/ into codingcode_jupyter/labextension (shipped in the
# package, so a person never needs node), then make the venv's Jupyter see it (an editable install
# does not install data files). Needs node and npm; run from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-.venv/bin/python}
(
  cd frontend
  npm ci --no-audit --no-fund --silent
  npx tsc
  staging=$("../$PYTHON" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')
  node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path "$staging" . >/dev/null
)
cp frontend/install.json codingcode_jupyter/labextension/install.json
# Which source the prebuilt copy was built from (webpack's output depends on where it was built,
# so the copy itself cannot be compared with a new build): scripts/test.sh checks it.
bash scripts/frontend_source_hash.sh > codingcode_jupyter/labextension/source.sha256
bash scripts/link_frontend.sh "$PYTHON"
