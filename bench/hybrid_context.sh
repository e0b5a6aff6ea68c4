#!/usr/bin/env bash
# Decode speed against context for a hybrid model (Qwen3.5: 3 of 4 layers linear attention with a
# constant-size state) next to a dense one of similar size, ridge and llama.cpp in one run.
#   usage: [REPEATS=1] bench/hybrid_context.sh [HYBRID_PRESET] [DENSE_PRESET] [TYPE] [THREADS] [CONTEXTS]
# defaults: qwen3.5-0.8b qwen3-0.6b q8_0 2 512,4096,16384
# Decode: 32 tokens after a prompt of CONTEXT tokens (ridge bench --ctx; llama.cpp's harness in
# batch mode with one sequence, timed from its first token). Prompt: the same CONTEXT tokens in
# one sequence (ridge bench's prefill; llama.cpp bench -p). Medians of REPEATS alternating runs.
set -euo pipefail
cd "$(dirname "$0")/.."
hybrid=${1:-qwen3.5-0.8b}
dense=${2:-qwen3-0.6b}
source bench/sweep_common.sh "$hybrid,$dense" "${3:-q8_0}" "${4:-2}"
contexts=${5:-512,4096,16384}
repeats=${REPEATS:-1}
peer=${RIDGE_PEER:-$(../shared/peer/install.sh 2>/dev/null)}
printf '%-14s %-6s %6s | %9s %9s %6s | %9s %9s %6s\n' preset type ctx ridge_pp peer_pp ratio ridge_tg peer_tg ratio
for preset in ${presets//,/ }; do
  for t in ${types//,/ }; do
    f=$(model_file "$preset" "$t")
    for ctx in ${contexts//,/ }; do
      rpp="" rtg="" ppp="" ptg=""
      for _ in $(seq "$repeats"); do
        r=$(build/ridge bench -m "$f" --batch 1 --ctx "$ctx" -n 32 -t "$threads" --json 2>/dev/null)
        rpp+=" $(jq -r '.results[0].points[0].prompt_tok_s' <<<"$r")"
        rtg+=" $(jq -r '.results[0].points[0].decode_tok_s' <<<"$r")"
        p=$(node "$peer" batch --model "$f" --threads "$threads" --seqs 1 -p "$ctx" -n 32 2>/dev/null | tail -n 1)
        ptg+=" $(jq -r '.decode_tok_s' <<<"$p")"
        p=$(node "$peer" bench --model "$f" --threads "$threads" -p "$ctx" -n 1 --ctx $((ctx + 64)) 2>/dev/null | tail -n 1)
        ppp+=" $(jq -r '.pp_tok_s' <<<"$p")"
      done
      rpp=$(median <<<"$rpp") rtg=$(median <<<"$rtg") ppp=$(median <<<"$ppp") ptg=$(median <<<"$ptg")
      awk -v preset="$preset" -v t="$t" -v ctx="$ctx" -v rpp="$rpp" -v ppp="$ppp" -v rtg="$rtg" -v ptg="$ptg" 'BEGIN {
        printf "%-14s %-6s %6d | %9.1f %9.1f %6.2f | %9.1f %9.1f %6.2f\n", preset, t, ctx, rpp, ppp, rpp / ppp, rtg, ptg, rtg / ptg }'
    done
  done
done
