#!/usr/bin/env bash
# The CUDA backend's check on a machine with a GPU (issue 30), in two halves, because the lent
# GPU machine has CUDA but not ridge's Debian libraries (fmt, CLI11, PCRE2, libcurl, ...):
#
#   scripts/device_check.sh prepare   here: builds ridge and test_backend with the CUDA backend
#                                     (scripts/build.sh, nvcc 13.0 as on the device) and packs
#                                     them into device-kit/ with the shared libraries they need
#                                     beyond glibc and libstdc++, and stories260K from ../shared.
#   scripts/device_check.sh run       there, in the repository root with device-kit carried: the
#                                     CUDA tests of test_backend (RIDGE_REQUIRE_CUDA=1: no GPU is
#                                     a failure), greedy text on the GPU against the CPU's for
#                                     synthetic llama/qwen2/qwen3 files and stories260K, then a
#                                     ridge bench on the GPU for Qwen3-1.7B and Qwen3-8B shapes.
#                                     Logs go to $OUT (the device tool's) or /tmp/device-check.
#
# The device tool's call: command "scripts/device_check.sh run", carry ["device-kit"],
# timeout_s 600. Exit status: 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=device-kit

prepare() {
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "device_check: no nvcc here" >&2; exit 1; }
  scripts/build.sh --target ridge -DRIDGE_CUDA=ON
  cmake --build build -j"$(nproc)" --target test_backend
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" "$stage/models"
  cp build/ridge build/tests/test_backend "$stage/bin/"
  strip --strip-all "$stage/bin/"*
  # Every shared library but the C runtime's, which the device image has in a newer version.
  ldd build/ridge build/tests/test_backend | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r -I{} cp -L {} "$stage/lib/"
  if [ -f ../shared/models/stories260K/stories260K.gguf ]; then
    cp ../shared/models/stories260K/stories260K.gguf "$stage/models/"
  fi
  # Compressed: the working tree and the carried kit travel within 64 MiB together.
  rm -rf "$kit" && mkdir -p "$kit"
  tar -C "$stage" -czf "$kit/kit.tar.gz" .
  rm -rf "$stage"
  du -sh "$kit"
}

# Greedy text of `model` on the CPU (ref kernels) and on the GPU must be the same. With quantized
# weights the CPU rounds activations to 8 bits for its integer dots and the GPU does not, so a
# random tiny model's near-tie can flip a later token: read a mismatch there with
# ForwardCudaVsCpu's logits (bounded per row), which is the stricter check.
same_greedy() {
  local name=$1 model=$2 prompt=$3 cpu gpu
  cpu=$("$kit/bin/ridge" run -m "$model" -p "$prompt" -n 32 --temp 0 --isa ref 2>/dev/null)
  gpu=$("$kit/bin/ridge" run -m "$model" -p "$prompt" -n 32 --temp 0 --device cuda 2>"$out/$name.gpu.err") || {
    echo "FAIL greedy $name: the GPU run failed: $(tail -1 "$out/$name.gpu.err")"; return 1; }
  if [ "$cpu" = "$gpu" ]; then
    echo "ok   greedy $name"
  else
    printf 'FAIL greedy %s\n  cpu: %q\n  gpu: %q\n' "$name" "$cpu" "$gpu"
    return 1
  fi
}

run() {
  out=${OUT:-/tmp/device-check}
  mkdir -p "$out"
  [ -f "$kit/kit.tar.gz" ] || { echo "device_check: no $kit/kit.tar.gz (run prepare here, carry $kit)" >&2; exit 1; }
  local unpacked=/tmp/device-kit
  rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -C "$unpacked" -xzf "$kit/kit.tar.gz"
  kit=$unpacked
  export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local failed=0 tmp=/tmp/device-check-models
  mkdir -p "$tmp"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$out/gpu.txt" || true
  # No GPU, no checks: stop at once (device time is short).
  "$kit/bin/ridge" probe --device cuda --size-mib 64 --reps 1 >/dev/null || exit 1
  echo "== op and forward tests on the GPU"
  RIDGE_REQUIRE_CUDA=1 timeout 300 "$kit/bin/test_backend" --gtest_filter='*cuda*:*Cuda*' \
    --gtest_brief=1 >"$out/tests.log" 2>&1 || failed=1
  grep -E '^\[ (cuda|  FAILED|  PASSED) ' "$out/tests.log" | head -60 || true
  tail -3 "$out/tests.log"
  echo "== greedy text, GPU vs CPU"
  for preset in tiny-llama tiny-qwen2 tiny-qwen3 tiny-gemma3; do
    for type in f16 q8_0 q4_k_m; do
      "$kit/bin/ridge" synth --preset "$preset" --type "$type" -t 8 -o "$tmp/$preset-$type.gguf" >/dev/null 2>&1
      same_greedy "$preset-$type" "$tmp/$preset-$type.gguf" "Once upon a time" || failed=1
    done
  done
  if [ -f "$kit/models/stories260K.gguf" ]; then
    same_greedy stories260K "$kit/models/stories260K.gguf" "Once upon a time" || failed=1
  fi
  echo "== the GPU's bandwidth (ridge probe --device cuda)"
  "$kit/bin/ridge" probe --device cuda --size-mib 2048 --reps 10 || failed=1
  echo "== ridge bench --device cuda (batch 1 and 8, context 128, 32 decode steps)"
  for spec in qwen3-1.7b:bf16 qwen3-1.7b:q8_0 qwen3-1.7b:q4_k_m qwen3-8b:bf16; do
    local preset=${spec%%:*} type=${spec##*:} f
    f="$tmp/$preset-$type.gguf"
    "$kit/bin/ridge" synth --preset "$preset" --type "$type" -t 16 -o "$f" >/dev/null 2>&1
    echo "-- $preset $type"
    timeout 150 "$kit/bin/ridge" bench -m "$f" --device cuda --batch 1,8 --ctx 128 -n 32 \
      2>&1 | tee "$out/bench-$preset-$type.txt" | tail -6 || failed=1
    rm -f "$f"
  done
  [ $failed -eq 0 ] && echo "device_check: all passed" || echo "device_check: FAILED (logs in $out)"
  return $failed
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: scripts/device_check.sh prepare|run" >&2; exit 2 ;;
esac
