#!/usr/bin/env bash
# ctest entry: the openai npm client tests (tests/server/node) against `ridge serve` on
# stories260K. usage: run_node_tests.sh RIDGE_BINARY SHARED_DIR. Exit 77 (skipped) without
# node/npm, the model, or the npm registry.
set -euo pipefail
binary=$1
shared=$2
model="$shared/models/stories260K/stories260K.gguf"
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are needed for the openai client tests"; exit 77
fi
if [ ! -f "$model" ]; then echo "SKIP: $model not found"; exit 77; fi
cd "$here/node"
if [ ! -d node_modules/openai ]; then
  if ! timeout 300 npm ci --no-audit --no-fund >npm.log 2>&1; then
    cat npm.log; echo "SKIP: npm ci failed (registry unreachable?)"; exit 77
  fi
fi
export RIDGE_BINARY="$binary" RIDGE_TEST_MODEL="$model" RIDGE_SHARED_DIR="$shared"
exec timeout 500 node --test --test-concurrency=1 openai_client.test.mjs tools.test.mjs
