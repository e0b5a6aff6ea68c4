#!/usr/bin/env bash
# Regenerates tests/model/data/mtp_reference/*.jsonl: llama.cpp's MTP head (mtp_oracle.cpp) on
# ridge's synthetic tiny Qwen3.5 models with an MTP block (seed 7, as the SyntheticPeer data).
#   tools/mtp_oracle/regen_reference.sh BUILD_DIR   (BUILD_DIR holds the ridge binary)
# Needs a llama.cpp build in $LLAMA_DIR (default /tmp/llama-native; see build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: regen_reference.sh BUILD_DIR}
oracle=$(tools/mtp_oracle/build.sh /tmp/mtp_oracle/mtp_oracle | tail -1)
seed=7
out=tests/model/data/mtp_reference
mkdir -p "$out" /tmp/mtp_oracle/models
# The first 32 tokens of the SyntheticPeer data (37 + 101 i mod 512).
tokens=37,138,239,340,441,30,131,232,333,434,23,124,225,326,427,16,117,218,319,420,9,110,211,312,413,2,103,204,305,406,507,96
for preset in tiny-qwen35-mtp tiny-qwen35moe-mtp; do
  for type in f32 q8_0; do
    m=/tmp/mtp_oracle/models/$preset-$type.gguf
    "$build/ridge" synth --preset "$preset" --type "$type" --seed "$seed" -o "$m" > /dev/null
    "$oracle" --model "$m" --tokens "$tokens" --top 8 --draft 4 --threads 2 2>/dev/null > "$out/$preset-$type.jsonl"
    echo "wrote $out/$preset-$type.jsonl ($(wc -l < "$out/$preset-$type.jsonl") lines)"
  done
done
