#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs the GGUF reader fuzzer for a bounded time.
#   usage: scripts/fuzz.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=build-fuzz
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_FUZZ=ON \
  -DRIDGE_TESTS=ON -DRIDGE_BENCH=OFF >/dev/null
cmake --build "$build" --target gguf_fuzz gguf_fuzz_seeds -j"$(nproc)"
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
"$build/tests/fuzz/gguf_fuzz_seeds" "$corpus"
echo "fuzzing the GGUF reader for ${secs}s"
"$build/tests/fuzz/gguf_fuzz" -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
