#!/bin/sh
# Regenerates imatrix_reference.gguf: llama.cpp's llama-imatrix on story.txt (this folder) for the
# synthetic model `ridge synth --preset tiny-qwen3 --type f32 --seed 7` writes, chunks of 64.
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
"$ridge" synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 -o "$tmp/tiny-qwen3.gguf" > /dev/null
# Run from this folder so the file records the dataset as "story.txt".
cd "$here"
"$llama" -m "$tmp/tiny-qwen3.gguf" -f story.txt -c 64 -b 64 -t 2 --no-ppl -o "$tmp/imatrix.gguf" > "$tmp/log.txt" 2>&1
cp "$tmp/imatrix.gguf" "$here/imatrix_reference.gguf"
"$ridge" imatrix --show "$here/imatrix_reference.gguf"
