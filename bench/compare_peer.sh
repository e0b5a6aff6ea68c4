#!/usr/bin/env bash
# Side-by-side speed on synthetic Qwen3-shaped models: ridge bench vs llama.cpp (peer `bench`), same
# files, same thread count, in one run.  usage: bench/compare_peer.sh [PRESET] [TYPES] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-qwen3-0.6b}
types=${2:-f16,q8_0,q4_k_m}
threads=${3:-2}
models=${RIDGE_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ridge/models}
peer=${RIDGE_PEER:-$(../shared/peer/install.sh 2>/dev/null)}
mkdir -p "$models"
build/ridge probe >/dev/null
printf '%-8s %12s %12s %8s %12s %12s %8s\n' type ridge_pp peer_pp ratio ridge_tg peer_tg ratio
for t in ${types//,/ }; do
  f="$models/$preset-$t.gguf"
  [ -f "$f" ] || build/ridge synth --preset "$preset" --type "$t" -o "$f" >/dev/null
  r=$(build/ridge bench -m "$f" --batch 1 --ctx 512 -n 64 -t "$threads" --json 2>/dev/null)
  p=$(node "$peer" bench --model "$f" --threads "$threads" -p 512 -n 64 2>/dev/null | tail -n 1)
  rpp=$(jq -r '.results[0].points[0].prompt_tok_s' <<<"$r"); rtg=$(jq -r '.results[0].points[0].decode_tok_s' <<<"$r")
  ppp=$(jq -r '.pp_tok_s' <<<"$p"); ptg=$(jq -r '.tg_tok_s' <<<"$p")
  printf '%-8s %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f\n' "$t" "$rpp" "$ppp" "$(echo "$rpp/$ppp" | bc -l)" \
    "$rtg" "$ptg" "$(echo "$rtg/$ptg" | bc -l)"
done
