#!/usr/bin/env bash
# Side-by-side speed on synthetic Qwen3-shaped models: ridge bench vs llama.cpp (peer `bench`), same
# files, same thread count, in one run, alternating the two engines REPEATS times (medians).
#   usage: [LAYERS=N] bench/compare_peer.sh [PRESETS] [TYPES] [THREADS]   (comma-separated lists)
# Prompt: 512 tokens in one sequence. Decode: 128 tokens after a 4-token prompt (ridge) / a
# 1-token prompt (llama.cpp's harness), so neither pays for a long KV cache. GB/s = the bytes a
# decode step must read (weights + KV, ridge's cost model, the same for both engines on the same
# file) x tokens/s; % = that over the read bandwidth `ridge probe --force` measured between the
# engines' runs of the same file (median; a shared VM's bandwidth drifts by 1.5x over an hour, so
# a probe cached earlier would judge the run against another machine state). pair% = ridge's decode
# against `ridge bench --paired-probe`: a 256 MiB read pass with the probe's best loop on the same
# threads after every decode step, the median of the steps' ratios (the same moment's memory).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/sweep_common.sh
peer=${RIDGE_PEER:-$(../shared/peer/install.sh 2>/dev/null)}
printf '%-12s %-7s %9s %9s %6s | %8s %8s %6s | %8s %6s %8s %6s | %6s | %6s\n' preset type ridge_pp peer_pp ratio \
  ridge_tg peer_tg ratio ridge_GB/s "%bw" peer_GB/s "%bw" probe "pair%"
for preset in ${presets//,/ }; do
  for t in ${types//,/ }; do
    f=$(model_file "$preset" "$t")
    rpp="" rtg="" ppp="" ptg="" probes="" pairs="" bytes=0
    for _ in $(seq "$repeats"); do
      r=$(build/ridge bench -m "$f" --batch 1 --ctx 512 -n 1 -t "$threads" --json 2>/dev/null)
      rpp+=" $(jq -r '.results[0].points[0].prompt_tok_s' <<<"$r")"
      r=$(build/ridge bench -m "$f" --batch 1 --ctx 4 -n 128 -t "$threads" --paired-probe --json 2>/dev/null)
      rtg+=" $(jq -r '.results[0].points[0].decode_tok_s' <<<"$r")"
      pairs+=" $(jq -r '.results[0].points[0].paired_probe.bandwidth_fraction' <<<"$r")"
      bytes=$(jq -r '.results[0].points[0].step_cost.bytes' <<<"$r")
      probes+=" $(build/ridge probe --force --threads "$threads" --json |
        jq -r --argjson t "$threads" '.bandwidth[] | select(.threads == $t) | .read_gbs * 1e9')"
      p=$(node "$peer" bench --model "$f" --threads "$threads" -p 512 -n 128 2>/dev/null | tail -n 1)
      ppp+=" $(jq -r '.pp_tok_s' <<<"$p")"
      ptg+=" $(jq -r '.tg_tok_s' <<<"$p")"
    done
    rpp=$(median <<<"$rpp") rtg=$(median <<<"$rtg") ppp=$(median <<<"$ppp") ptg=$(median <<<"$ptg")
    bw=$(median <<<"$probes") pair=$(median <<<"$pairs")
    awk -v preset="$preset" -v t="$t" -v rpp="$rpp" -v ppp="$ppp" -v rtg="$rtg" -v ptg="$ptg" \
        -v bytes="$bytes" -v bw="$bw" -v pair="$pair" 'BEGIN {
      printf "%-12s %-7s %9.1f %9.1f %6.2f | %8.1f %8.1f %6.2f | %8.1f %5.0f%% %8.1f %5.0f%% | %6.1f | %5.0f%%\n",
        preset, t, rpp, ppp, rpp / ppp, rtg, ptg, rtg / ptg,
        rtg * bytes / 1e9, 100 * rtg * bytes / bw, ptg * bytes / 1e9, 100 * ptg * bytes / bw, bw / 1e9,
        100 * pair }'
  done
done
awk -v r="$repeats" -v t="$threads" 'BEGIN { printf "medians of %d alternating runs at %d threads; probe = median GB/s of `ridge probe --force` between them\n", r, t }'
