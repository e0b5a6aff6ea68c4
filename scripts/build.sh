#!/usr/bin/env bash
# Configures and builds ridge (Release) into ./build.  usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRIDGE_WERROR=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
