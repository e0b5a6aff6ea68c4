#!/usr/bin/env bash
# Second CI configuration: unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_SANITIZE=ON -DRIDGE_WERROR=ON \
  -DRIDGE_BENCH=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export RIDGE_SANITIZED=1  # tests may shrink their heaviest cases
ctest --test-dir build-asan -j"$(nproc)" --output-on-failure --timeout 1200 -LE slow
