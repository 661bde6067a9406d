#!/usr/bin/env bash
# One hash of the notebook extension's source (what scripts/build_frontend.sh builds from).
set -euo pipefail
cd "$(dirname "$0")/../frontend"
cat package.json package-lock.json tsconfig.json install.json src/*.ts style/* | sha256sum | cut -d' ' -f1
