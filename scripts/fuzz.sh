#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs the GGUF reader fuzzer, then the grammar /
# JSON Schema fuzzer (request-supplied structured-output constraints), then the checkpoint
# tokenizer fuzzer (tokenizer.model / tokenizer.json of a downloaded folder), each for a bounded
# time.
#   usage: scripts/fuzz.sh [SECONDS]   (default 60; the grammar and checkpoint fuzzers get half each)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=build-fuzz
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_FUZZ=ON \
  -DRIDGE_TESTS=ON -DRIDGE_BENCH=OFF >/dev/null
cmake --build "$build" --target gguf_fuzz gguf_fuzz_seeds grammar_fuzz checkpoint_fuzz -j"$(nproc)"
# fuzz TARGET CORPUS SECONDS MAX_LEN: a bounded run that fails the script on a finding.
fuzz() {
  echo "fuzzing $1 for ${3}s"
  "$build/tests/fuzz/$1" -max_total_time="$3" -max_len="$4" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 "$2" 2>&1 | tail -n 15
}
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
"$build/tests/fuzz/gguf_fuzz_seeds" "$corpus"
fuzz gguf_fuzz "$corpus" "$secs" 4096
gcorpus="$build/grammar-corpus"
mkdir -p "$gcorpus"
printf '\x00root ::= "a" [b-z]* ("c" | d){1,3}\nd ::= [^x]' >"$gcorpus/gbnf"
printf '\x01{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-c]+$"},"b":{"enum":[1,"x"]}},"required":["a"]}' >"$gcorpus/schema"
fuzz grammar_fuzz "$gcorpus" "$((secs / 2))" 2048
ccorpus="$build/checkpoint-corpus"
mkdir -p "$ccorpus"
# Seeds: a two-piece SentencePiece model (pieces, trainer spec with model type BPE, normalizer)
# and a tokenizer.json with added tokens.
printf '\x00\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02\x0a\x08\x0a\x01a\x15\x00\x00\x80\xbf\x12\x02\x18\x02\x1a\x02\x18\x01' >"$ccorpus/spm"
printf '\x01{"added_tokens":[{"id":70,"content":"<x>","special":true}],"model":{"type":"BPE","vocab":{"a":0}}}' >"$ccorpus/json"
fuzz checkpoint_fuzz "$ccorpus" "$((secs / 2))" 4096
