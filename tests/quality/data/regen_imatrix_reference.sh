#!/bin/sh
# Regenerates imatrix_reference.gguf and imatrix_reference-PRESET.gguf: llama.cpp's llama-imatrix
# on story.txt (this folder) for the synthetic models `ridge synth --preset P --type f32 --seed 7`
# writes (tiny-qwen3; the mixtures of experts tiny-qwen3moe and tiny-gpt-oss; the hybrid
# tiny-qwen35), chunks of 64; for tiny-qwen3moe also the legacy .dat form (imatrix_reference-tiny-qwen3moe.dat).
# llama-imatrix is not in the prebuilt peer: build it from the source the peer ships
# (../shared/peer/README.md; node-llama-cpp's llama/gitRelease.bundle):
#   cmake -S src -B build -G Ninja -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target llama-imatrix
# Usage: regen_imatrix_reference.sh path/to/llama-imatrix path/to/ridge
set -e
llama=${1:?usage: regen_imatrix_reference.sh llama-imatrix ridge}
ridge=$(cd "$(dirname "${2:?}")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Run from this folder so the file records the dataset as "story.txt".
cd "$here"
for p in tiny-qwen3 tiny-qwen3moe tiny-gpt-oss tiny-qwen35; do
  "$ridge" synth --preset $p --type f32 --seed 7 -t 1 -o "$tmp/$p.gguf" > /dev/null
  out=imatrix_reference-$p.gguf
  [ $p = tiny-qwen3 ] && out=imatrix_reference.gguf
  "$llama" -m "$tmp/$p.gguf" -f story.txt -c 64 -b 64 -t 2 --no-ppl -o "$tmp/imatrix.gguf" > "$tmp/log.txt" 2>&1
  cp "$tmp/imatrix.gguf" "$here/$out"
  "$ridge" imatrix --show "$here/$out" | head -3
  if [ $p = tiny-qwen3moe ]; then  # and the legacy .dat form of the same run
    "$llama" -m "$tmp/$p.gguf" -f story.txt -c 64 -b 64 -t 2 --no-ppl --output-format dat -o "$here/imatrix_reference-$p.dat" > "$tmp/log.txt" 2>&1
  fi
done
