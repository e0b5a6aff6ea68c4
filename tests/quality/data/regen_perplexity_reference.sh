#!/bin/sh
# Regenerates perplexity_reference.json: llama.cpp's llama-perplexity on story.txt (this folder)
# for stories260K (../shared/models) and the synthetic models `ridge synth --seed 7` writes, at
# several chunk sizes. llama-perplexity is not in the prebuilt peer: build it from the source the
# peer ships (../shared/peer/README.md; node-llama-cpp's llama/gitRelease.bundle):
#   cmake -S src -B build -G Ninja -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target llama-perplexity
# Usage: regen_perplexity_reference.sh path/to/llama-perplexity path/to/ridge path/to/stories260K.gguf
set -e
llama=${1:?usage: regen_perplexity_reference.sh llama-perplexity ridge stories260K.gguf}
ridge=${2:?}
stories=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ridge" synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 -o "$tmp/tiny-qwen3.gguf" > /dev/null
"$ridge" synth --preset tiny-llama --type q8_0 --seed 7 -t 1 -o "$tmp/tiny-llama.gguf" > /dev/null
"$ridge" synth --preset tiny-qwen35 --type f32 --seed 7 -t 1 -o "$tmp/tiny-qwen35.gguf" > /dev/null
{
  for run in "stories260K $stories 64" "stories260K $stories 128" "stories260K $stories 256" \
             "synth:tiny-qwen3:f32 $tmp/tiny-qwen3.gguf 64" "synth:tiny-llama:q8_0 $tmp/tiny-llama.gguf 128" \
             "synth:tiny-qwen35:f32 $tmp/tiny-qwen35.gguf 64"; do
    set -- $run
    "$llama" -m "$2" -f "$here/story.txt" -c "$3" -b "$3" -t 2 > "$tmp/out.txt" 2>&1
    python3 - "$1" "$3" "$tmp/out.txt" <<'PY'
import json, re, sys
name, ctx, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path).read()
m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", text)
chunks = re.search(r"calculating perplexity over (\d+) chunks", text)
print(json.dumps({"model": name, "ctx": ctx, "chunks": int(chunks.group(1)), "ppl": float(m.group(1)), "error": float(m.group(2))}))
PY
  done
} | python3 -c "
import json, sys
print(json.dumps({'generator': 'llama-perplexity, llama.cpp 80fb11a (the peer bundle), native build, 2 threads', 'text': 'story.txt', 'seed': 7,
                  'cases': [json.loads(l) for l in sys.stdin]}, indent=1))" > "$here/perplexity_reference.json"
cat "$here/perplexity_reference.json"
