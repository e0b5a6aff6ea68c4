#!/usr/bin/env bash
# 1 -> N thread scaling of ridge on synthetic Qwen3-shaped models: prompt tok/s (512 tokens),
# decode tok/s (128 tokens after a 4-token prompt), and the decode's fraction of the read
# bandwidth of the same moment (`ridge bench --paired-probe`: a read pass with the probe's best
# loop on the same threads after every step, median of the steps' ratios), at 1 and N threads,
# alternating the thread counts REPEATS times (medians).
#   usage: bench/thread_scaling.sh [PRESETS] [TYPES] [N]      (comma-separated lists)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/sweep_common.sh
n=$threads
printf '%-12s %-7s | %9s %9s %6s | %8s %8s %6s | %6s %6s\n' preset type "pp 1t" "pp ${n}t" scale \
  "tg 1t" "tg ${n}t" scale "pair1" "pair${n}"
for preset in ${presets//,/ }; do
  for t in ${types//,/ }; do
    f=$(model_file "$preset" "$t")
    declare -A pp=() tg=() pair=()
    for _ in $(seq "$repeats"); do
      for th in 1 "$n"; do
        r=$(build/ridge bench -m "$f" --batch 1 --ctx 512 -n 1 -t "$th" --json 2>/dev/null)
        pp[$th]+=" $(jq -r '.results[0].points[0].prompt_tok_s' <<<"$r")"
        r=$(build/ridge bench -m "$f" --batch 1 --ctx 4 -n 128 -t "$th" --paired-probe --json 2>/dev/null)
        tg[$th]+=" $(jq -r '.results[0].points[0].decode_tok_s' <<<"$r")"
        pair[$th]+=" $(jq -r '.results[0].points[0].paired_probe.bandwidth_fraction' <<<"$r")"
      done
    done
    awk -v preset="$preset" -v t="$t" -v p1="$(median <<<"${pp[1]}")" -v pn="$(median <<<"${pp[$n]}")" \
        -v t1="$(median <<<"${tg[1]}")" -v tn="$(median <<<"${tg[$n]}")" \
        -v q1="$(median <<<"${pair[1]}")" -v qn="$(median <<<"${pair[$n]}")" 'BEGIN {
      printf "%-12s %-7s | %9.1f %9.1f %6.2f | %8.1f %8.1f %6.2f | %5.0f%% %5.0f%%\n",
        preset, t, p1, pn, pn / p1, t1, tn, tn / t1, 100 * q1, 100 * qn }'
  done
done
echo "medians of $repeats alternating runs; pair = decode against the read pass of the same moment at that thread count"
