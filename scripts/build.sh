#!/usr/bin/env bash
# Configures and builds ridge (Release) into ./build.
#   usage: scripts/build.sh [--target NAME] [extra cmake args]   (--target ridge: the binary only)
set -euo pipefail
cd "$(dirname "$0")/.."
target=()
if [ "${1:-}" = --target ]; then
  target=(--target "${2:?--target needs a name}")
  shift 2
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRIDGE_WERROR=ON "$@" >/dev/null
cmake --build build -j"$(nproc)" "${target[@]}"
