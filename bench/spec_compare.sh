#!/usr/bin/env bash
# Speculative decoding against plain decoding on the same file, prompt and seed (the output is the
# same, so only the speed differs): ridge run, REPEATS alternating runs, medians.
#   usage: [REPEATS=3] bench/spec_compare.sh MODEL.gguf [THREADS] [SAMPLING] [SPEC...]
# SAMPLING: ridge run's sampling flags (default "--temp 0"); SPEC: the speculation flags (default
# "--spec ngram --spec-max 8"; e.g. "--draft small.gguf"). Prints decode tok/s of both, their
# ratio, the acceptance and the speed-up the cost model predicted for the steps taken.
# LLAMA_LOOKUP=path/to/llama-lookup (a native llama.cpp build, ../shared/peer/README.md): llama.cpp's
# prompt lookup on the same file and prompt in the same run (greedy, --spec-draft-n-max 8).
# LLAMA_SPEC=path/to/llama-speculative-simple with LLAMA_SPEC_ARGS (e.g. "--spec-type draft-mtp"
# for the MTP head): llama.cpp's speculative decoding on the same file and prompt (greedy);
# LLAMA_BENCH=path/to/llama-bench: llama.cpp's plain decode (tg of the same length).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/spec_compare.sh MODEL.gguf [THREADS] [SAMPLING] [SPEC...]}
threads=${2:-2}
sampling=${3:---temp 0}
shift $(( $# < 3 ? $# : 3 ))
spec=${*:---spec ngram --spec-max 8}
repeats=${REPEATS:-3}
prompt=${PROMPT:-The history of the world}
n=${TOKENS:-128}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
plain="" fast="" accept="" predicted="" lookup="" lookup_accept="" lspec="" lspec_accept="" lplain=""
for _ in $(seq "$repeats"); do
  if [[ -n "${LLAMA_LOOKUP:-}" ]]; then
    out=$("$LLAMA_LOOKUP" -m "$model" -t "$threads" -p "$prompt" -n "$n" --temp 0 --spec-draft-n-max 8 -c 2048 2>&1)
    lookup+=" $(sed -nE 's/.*decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +([0-9.]+) t\/s.*/\1/p' <<<"$out")"
    lookup_accept+=" $(sed -nE 's/.*accept += ([0-9.]+)%.*/\1/p' <<<"$out")"
  fi
  if [[ -n "${LLAMA_SPEC:-}" ]]; then
    # shellcheck disable=SC2086
    out=$("$LLAMA_SPEC" -m "$model" -t "$threads" -p "$prompt" -n "$n" --temp 0 -c 2048 ${LLAMA_SPEC_ARGS:-} 2>&1)
    lspec+=" $(sed -nE 's/.*decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +([0-9.]+) t\/s.*/\1/p' <<<"$out")"
    lspec_accept+=" $(sed -nE 's/.*accept += ([0-9.]+)%.*/\1/p' <<<"$out")"
  fi
  if [[ -n "${LLAMA_BENCH:-}" ]]; then
    out=$("$LLAMA_BENCH" -m "$model" -t "$threads" -p 0 -n "$n" -r 1 -o csv 2>/dev/null | tail -1)
    lplain+=" $(awk -F, '{gsub(/"/, "", $0); print $(NF-1)}' <<<"$out")"
  fi
  # shellcheck disable=SC2086
  out=$(build/ridge run -m "$model" -t "$threads" -p "$prompt" -n "$n" $sampling 2>&1)
  plain+=" $(sed -nE 's/.*decode: [0-9]+ tokens, [0-9.]+ s, ([0-9.]+) tok\/s.*/\1/p' <<<"$out")"
  # shellcheck disable=SC2086
  out=$(build/ridge run -m "$model" -t "$threads" -p "$prompt" -n "$n" $sampling $spec 2>&1)
  fast+=" $(sed -nE 's/.*decode: [0-9]+ tokens, [0-9.]+ s, ([0-9.]+) tok\/s.*/\1/p' <<<"$out")"
  accept+=" $(sed -nE 's/.*accepted \(([0-9]+)%\).*/\1/p' <<<"$out")"
  predicted+=" $(sed -nE 's/.*predicted speed-up ([0-9.]+)x.*/\1/p' <<<"$out")"
done
p=$(median <<<"$plain") f=$(median <<<"$fast") a=$(median <<<"$accept") pr=$(median <<<"$predicted")
printf '%s | %s | %s\nplain %.1f tok/s · speculative %.1f tok/s · %.2fx (predicted %.2fx) · %s%% of drafts accepted\n' \
  "$(basename "$model")" "$sampling" "$spec" "$p" "$f" "$(awk -v a="$f" -v b="$p" 'BEGIN{print a/b}')" "$pr" "$a"
if [[ -n "${LLAMA_LOOKUP:-}" ]]; then
  printf 'llama.cpp llama-lookup %.1f tok/s · %s%% of drafts accepted\n' "$(median <<<"$lookup")" "$(median <<<"$lookup_accept")"
fi
if [[ -n "${LLAMA_BENCH:-}" ]]; then
  printf 'llama.cpp plain (llama-bench tg%s) %.1f tok/s\n' "$n" "$(median <<<"$lplain")"
fi
if [[ -n "${LLAMA_SPEC:-}" ]]; then
  printf 'llama.cpp llama-speculative-simple %s: %.1f tok/s · %s%% of drafts accepted\n' "${LLAMA_SPEC_ARGS:-}" \
    "$(median <<<"$lspec")" "$(median <<<"$lspec_accept")"
fi
