#!/usr/bin/env bash
# Alternating pairs of two ridge binaries on one model: is a change free of speed cost?
#   bench/ab_binaries.sh OLD NEW MODEL [THREADS=1] [PAIRS=9] [CTX=128] [DECODE=64]
# Each pair runs `ridge bench` (batch 1) with OLD then NEW, the order swapping every pair so that
# drift on a shared machine hits both alike. Prints each run, then per figure the medians of
# prompt and decode tok/s per binary, their ratio NEW/OLD, and the median of the ratios within
# each pair (the figure least moved by drift).
set -euo pipefail
old=$1; new=$2; model=$3
threads=${4:-1}; pairs=${5:-9}; ctx=${6:-128}; decode=${7:-64}
for b in "$old" "$new"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
[ -f "$model" ] || { echo "no such model: $model" >&2; exit 2; }

run() {  # prints "prompt_tok_s decode_tok_s"
  "$1" bench -m "$model" --batch 1 --ctx "$ctx" -n "$decode" -t "$threads" --csv --no-probe |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
             { print $col["prompt_tok_s"], $col["decode_tok_s"] }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < pairs; ++i)); do
  if ((i % 2 == 0)); then order="old new"; else order="new old"; fi
  for which in $order; do
    if [ "$which" = old ]; then bin=$old; else bin=$new; fi
    r=$(run "$bin")
    echo "$r" >> "$tmp/$which"
    echo "pair $i $which: prompt/decode tok/s $r"
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for col in 1 2; do
  name=$([ $col = 1 ] && echo prompt || echo decode)
  mo=$(cut -d' ' -f$col "$tmp/old" | median)
  mn=$(cut -d' ' -f$col "$tmp/new" | median)
  mr=$(paste -d' ' <(cut -d' ' -f$col "$tmp/old") <(cut -d' ' -f$col "$tmp/new") |
       awk '{ print $2 / $1 }' | median)
  awk -v n="$name" -v o="$mo" -v w="$mn" -v r="$mr" -v t="$threads" \
    'BEGIN { printf "%s tok/s, %d thread(s): old %.1f, new %.1f, new/old %.3f, median pair ratio %.3f\n", n, t, o, w, w / o, r }'
done
