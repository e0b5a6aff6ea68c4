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
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
"$build/tests/fuzz/gguf_fuzz_seeds" "$corpus"
echo "fuzzing the GGUF reader for ${secs}s"
"$build/tests/fuzz/gguf_fuzz" -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
gcorpus="$build/grammar-corpus"
mkdir -p "$gcorpus"
printf '\x00root ::= "a" [b-z]* ("c" | d){1,3}\nd ::= [^x]' >"$gcorpus/gbnf"
printf '\x01{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-c]+$"},"b":{"enum":[1,"x"]}},"required":["a"]}' >"$gcorpus/schema"
echo "fuzzing grammars and JSON Schemas for $((secs / 2))s"
"$build/tests/fuzz/grammar_fuzz" -max_total_time="$((secs / 2))" -max_len=2048 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$gcorpus" 2>&1 | tail -n 15
ccorpus="$build/checkpoint-corpus"
mkdir -p "$ccorpus"
# Seeds: a two-piece SentencePiece model (pieces, trainer spec with model type BPE, normalizer)
# and a tokenizer.json with added tokens.
printf '\x00\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02\x0a\x08\x0a\x01a\x15\x00\x00\x80\xbf\x12\x02\x18\x02\x1a\x02\x18\x01' >"$ccorpus/spm"
printf '\x01{"added_tokens":[{"id":70,"content":"<x>","special":true}],"model":{"type":"BPE","vocab":{"a":0}}}' >"$ccorpus/json"
echo "fuzzing checkpoint tokenizer files for $((secs / 2))s"
"$build/tests/fuzz/checkpoint_fuzz" -max_total_time="$((secs / 2))" -max_len=4096 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$ccorpus" 2>&1 | tail -n 15
