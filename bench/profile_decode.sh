#!/usr/bin/env bash
# Where a decode step's time goes, by CPU-clock sampling (works where the machine exposes no
# hardware counters, as on this project's VMs): `perf record -e cpu-clock` over `ridge bench`
# decoding N tokens after a 4-token prompt, the model's load left out by starting the recording
# late, then the samples grouped by what the code does.
#   usage: bench/profile_decode.sh MODEL.gguf [THREADS] [TOKENS]
#   env:   TOP (symbols listed, default 8), DELAY_MS (default: a 1-token run's wall time, load included, plus 300)
# Needs perf (Debian: apt-get install linux-perf) and permission to sample (root, or
# kernel.perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/profile_decode.sh MODEL.gguf [THREADS] [TOKENS]}
threads=${2:-2}
tokens=${3:-256}
command -v perf >/dev/null || { echo "profile_decode: perf not found (apt-get install linux-perf)" >&2; exit 1; }
[ -f "$model" ] || { echo "profile_decode: no such model file: $model" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -z "${DELAY_MS:-}" ]; then  # a 1-token run: the load and set-up the recording should skip
  t0=$(date +%s%N)
  build/ridge bench -m "$model" --batch 1 --ctx 4 -n 1 -t "$threads" >/dev/null 2>&1
  DELAY_MS=$(( ($(date +%s%N) - t0) / 1000000 + 300 ))
fi
perf record -q -e cpu-clock -F 2000 -D "$DELAY_MS" -o "$out/perf.data" -- \
  build/ridge bench -m "$model" --batch 1 --ctx 4 -n "$tokens" -t "$threads" >"$out/bench.txt" 2>&1
perf report -i "$out/perf.data" --no-children --sort symbol --percent-limit 0 --stdio 2>/dev/null |
  awk '/^ *[0-9.]+%/ { p = $1; sub("%", "", p); $1 = ""; print p "\t" $0 }' >"$out/symbols.tsv"
echo "decode profile: $model, $threads thread(s), $tokens tokens, recording from ${DELAY_MS} ms"
grep -E "tok/s|roof" "$out/bench.txt" | head -n 3 || true
awk -F'\t' '
  function group(s) {
    if (s ~ /qk_|pv_|attend|softmax|flash/) return "attention"
    if (s ~ /layout_step|direct_panel|rows_q|rows_f|rows_bf|panel_rows|dot_q|gemv|tile|decode_streamed|rows_k/) return "matmul kernels"
    if (s ~ /ThreadPool|_M_run|sched_yield|futex|__schedule|finish_task_switch/) return "thread pool: waiting at barriers"
    if (s ~ /quantize_act|rms_norm|swiglu|rope|add_inplace|kv_store|silu/) return "norms, activation quantization, rope, KV write"
    if (s ~ /clear_page|convert_layout|memmove|memcpy|page_fault/) return "memory setup and copies"
    if (s ~ /^ *\[k\]/) return "kernel, other"
    return "other"
  }
  { share[group($2)] += $1; total += $1 }
  END { for (g in share) printf "%6.1f%%  %s\n", share[g], g }' "$out/symbols.tsv" | sort -rn
echo "top symbols:"
head -n "${TOP:-8}" "$out/symbols.tsv" | awk -F'\t' '{ printf "%6.2f%%  %s\n", $1, substr($2, 1, 110) }'
