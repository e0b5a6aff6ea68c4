#!/usr/bin/env bash
# Speculation inside continuous batching: `ridge batch` with and without --spec ngram on the same
# requests (the outputs are the same, only the speed differs), at several --max-seqs, REPEATS
# alternating runs, medians. Shows the generated tok/s of both, their ratio and the acceptance,
# and where the engine turns speculation off as the batch grows (drafts verified per step fall).
#   usage: [REPEATS=3] [SEQS="1 4 16"] [REQUESTS=16] [TOKENS=96] [TEMP=0] [DRAFT=SMALL.gguf] bench/spec_batch.sh MODEL.gguf [THREADS]
# TEMP > 0 samples (seeded per request), where far fewer drafts are right: the cost of trying.
# DRAFT: speculate with that draft model (--draft) instead of prompt lookup.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/spec_batch.sh MODEL.gguf [THREADS]}
threads=${2:-2}
repeats=${REPEATS:-3}
n_req=${REQUESTS:-16}
tokens=${TOKENS:-96}
temp=${TEMP:-0}
spec_flags=(--spec ngram)
[[ -n "${DRAFT:-}" ]] && spec_flags=(--draft "$DRAFT")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Greedy requests whose prompts repeat a phrase (as code edits and summaries repeat their context).
for i in $(seq "$n_req"); do
  printf '{"prompt": "Item %d: the quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick brown", "max_tokens": %d, "temperature": %s, "seed": %d}\n' "$i" "$tokens" "$temp" "$i"
done >"$work/prompts.jsonl"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
rate() { sed -nE 's/.*throughput: [0-9.]+ tok\/s total \(prompt \+ generated\), ([0-9.]+) generated tok\/s.*/\1/p'; }
echo "$(basename "$model") · ${spec_flags[*]} · $n_req requests of $tokens tokens · temperature $temp · $threads threads"
for seqs in ${SEQS:-1 4 16}; do
  plain="" fast="" drafted="" accepted=""
  for _ in $(seq "$repeats"); do
    out=$(build/ridge batch -q -m "$model" -t "$threads" --prompts "$work/prompts.jsonl" --max-seqs "$seqs" --ignore-eos 2>&1)
    plain+=" $(rate <<<"$out")"
    out=$(build/ridge batch -q -m "$model" -t "$threads" --prompts "$work/prompts.jsonl" --max-seqs "$seqs" --ignore-eos "${spec_flags[@]}" 2>&1)
    fast+=" $(rate <<<"$out")"
    drafted+=" $(sed -nE 's/.*speculation: .* ([0-9]+) draft tokens verified.*/\1/p' <<<"$out")"
    accepted+=" $(sed -nE 's/.*draft tokens verified, ([0-9]+) accepted.*/\1/p' <<<"$out")"
  done
  p=$(median <<<"$plain") f=$(median <<<"$fast") d=$(median <<<"$drafted") a=$(median <<<"$accepted")
  printf 'max-seqs %3d: plain %.1f tok/s · speculative %.1f tok/s · %.2fx · %s drafts verified, %s accepted\n' \
    "$seqs" "$p" "$f" "$(awk -v a="$f" -v b="$p" 'BEGIN{print a/b}')" "$d" "$a"
done
