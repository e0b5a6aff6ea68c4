#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds in Release with warnings as errors, installs
# the llama.cpp peer when ../shared is present, and runs every test in parallel under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
if [ -x ../shared/peer/install.sh ] && command -v node >/dev/null; then
  export RIDGE_PEER=$(../shared/peer/install.sh 2>/dev/null) || unset RIDGE_PEER
fi
ctest --test-dir build -j"$(nproc)" --output-on-failure --timeout 900
