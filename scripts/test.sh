#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine with Python 3.11, then run it all.
# Used as-is by .ci/run. Safe to re-run: each step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}

# System packages: Chromium for the browser test, bubblewrap for the command sandbox, tmux for the
# terminal IPython test, openssl for the benchmarks' TLS certificate.
if ! command -v chromium >/dev/null || ! command -v bwrap >/dev/null || ! command -v tmux >/dev/null \
   || ! command -v openssl >/dev/null; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium bubblewrap tmux openssl >/dev/null
fi

# The project and its test tools.
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
# pip writes an installed package's bytecode at install time, but an editable one only on
# first import, which PYTHONDONTWRITEBYTECODE (set on some machines) forbids: every kernel
# would then compile the whole package again. Write it here, as pip would.
.venv/bin/python -m compileall -q codingcode_jupyter >/dev/null
# The notebook extension: the prebuilt copy in the package must come from the source in
# frontend/; then it is built from that source (TypeScript, npm), so the tests run what the
# source says, and linked into the venv's Jupyter.
if [ "$(bash scripts/frontend_source_hash.sh)" != "$(cat codingcode_jupyter/labextension/source.sha256 2>/dev/null)" ]; then
  echo "The prebuilt notebook extension is not built from frontend/ as it is: run scripts/build_frontend.sh and commit it." >&2
  exit 1
fi
bash scripts/build_frontend.sh .venv/bin/python

# A second kernel environment with ipykernel 6.29, for the kernel tests that must pass on 6.x too.
if [ ! -x .venv-ipykernel6/bin/python ]; then
  "$PY" -m venv .venv-ipykernel6
fi
# pandas and matplotlib: the confined fork's kernel tests compute on a frame and draw a figure.
.venv-ipykernel6/bin/pip install -q --disable-pip-version-check 'ipykernel==6.29.5' -e . pandas matplotlib
export CODINGCODE_IPYKERNEL6_PYTHON="$PWD/.venv-ipykernel6/bin/python"

# Jupyter Enterprise Gateway for the remote-kernel browser test, in a venv of its own: 3.3 pins
# jupyter-server<2 and jupyter-client<7, which would break JupyterLab 4 beside it. Its kernels
# run the project's venv (tests/e2e/test_gateway.py writes the kernelspec).
[ -x .venv-gateway/bin/python ] || "$PY" -m venv .venv-gateway
[ -x .venv-gateway/bin/jupyter-enterprisegateway ] \
  || .venv-gateway/bin/pip install -q --disable-pip-version-check 'jupyter-enterprise-gateway==3.3.0'

# jupyter-collaboration for the two-page real-time test, in a venv of its own: installed, it turns
# every Lab into a collaborative one, and the other browser tests run the plain Lab of .venv.
# Same JupyterLab as .venv (5.0 supports Lab 4.4+); the notebook extension linked as in .venv.
[ -x .venv-collab/bin/python ] || "$PY" -m venv .venv-collab
.venv-collab/bin/pip install -q --disable-pip-version-check -e . 'jupyter-collaboration==5.0.4' \
  "jupyterlab==$(.venv/bin/python -c 'import jupyterlab; print(jupyterlab.__version__)')"
bash scripts/link_frontend.sh .venv-collab/bin/python

# A real JupyterHub for the deployment tests (tests/hub/): the hub, jupyter_server for the users'
# single-user servers and the project, in a venv of their own (the hub pins what it needs of the
# Jupyter stack); configurable-http-proxy from npm, pinned.
[ -x .venv-hub/bin/python ] || "$PY" -m venv .venv-hub
.venv-hub/bin/pip install -q --disable-pip-version-check 'jupyterhub==6.1.1' 'jupyter_server>=2.14' -e .
if ! grep -q '"version": "5.3.0"' .hub-proxy/node_modules/configurable-http-proxy/package.json 2>/dev/null; then
  mkdir -p .hub-proxy
  npm install --prefix .hub-proxy --no-audit --no-fund --silent configurable-http-proxy@5.3.0
fi

# Real MCP servers the MCP tests run against, pinned; each in a place of its own so their
# dependencies never meet ours (tests skip with a reason when one is missing locally).
MCP_NPM=("@modelcontextprotocol/server-everything@2026.8.31" "@modelcontextprotocol/server-filesystem@2026.8.31")
if [ ! -f .mcp-servers/node_modules/@modelcontextprotocol/server-everything/package.json ] \
   || [ ! -f .mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/package.json ] \
   || ! grep -q '"version": "2026.8.31"' .mcp-servers/node_modules/@modelcontextprotocol/server-everything/package.json; then
  mkdir -p .mcp-servers
  npm install --prefix .mcp-servers --no-audit --no-fund --silent "${MCP_NPM[@]}"
fi
[ -x .venv-mcp-servers/bin/python ] || "$PY" -m venv .venv-mcp-servers
.venv-mcp-servers/bin/pip install -q --disable-pip-version-check \
  'mcp-server-time==2026.10.19' 'mcp-server-git==2026.10.19' 'mcp-server-fetch==2026.10.24'

# The checks first: ruff's rules, mypy in strict mode and the package's import layers (which, and
# why, in pyproject.toml), then the tests.
.venv/bin/ruff check
.venv/bin/python -m mypy codingcode_jupyter
.venv/bin/lint-imports

# The whole suite, slow end-to-end tests included. The unit, kernel and sandbox tests on four
# workers: most of them wait on a child (a kernel, bwrap, an MCP server) while another uses the CPU,
# and a test file stays on one worker, so its module fixtures are shared. Then the browser tests one
# at a time: each drives a JupyterLab and a Chromium of its own, which two cores do not run twice
# without the waits a person would see becoming what the test measures. Arguments given to this
# script pick the tests instead (one pass, one at a time).
# --junitxml: benchmarks/bench_suite.py reports the suite's wall time from these files.
JUNIT=/tmp/codingcode-test-junit.xml
# The judge's property tests try more inputs here than in a quick local run.
export CODINGCODE_PROPERTY_EXAMPLES=200
JUNIT_BROWSER=/tmp/codingcode-test-junit-browser.xml
rm -f "$JUNIT" "$JUNIT_BROWSER"
if [ $# -gt 0 ]; then
  .venv/bin/python -m pytest -q -p no:cacheprovider -m "slow or not slow" -n 0 --junitxml="$JUNIT" "$@"
else
  status=0
  .venv/bin/python -m pytest -q -p no:cacheprovider -m "slow or not slow" -n 4 --dist loadfile \
    --ignore=tests/e2e --ignore=tests/hub --junitxml="$JUNIT" || status=$?
  # The hub's tests start up to ten kernels at once: beside four workers they would measure the machine.
  .venv/bin/python -m pytest -q -p no:cacheprovider -m "slow or not slow" -n 0 tests/e2e tests/hub \
    --junitxml="$JUNIT_BROWSER" || status=$?
  # The whole script's wall time (installs, checks, both passes), for the benchmark's row.
  echo "$SECONDS" > /tmp/codingcode-test-seconds
  [ "$status" = 0 ] || exit "$status"
fi

# Benchmarks in quick mode: they must keep working; their figures never fail the run.
if [ -f benchmarks/run.py ]; then
  .venv/bin/python benchmarks/run.py --quick --output /tmp/codingcode-bench-results.md
fi
