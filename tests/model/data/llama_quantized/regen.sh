#!/bin/sh
# Regenerates <preset>-<type>.gguf and .json here: ridge synth's f32 model (seed 7) quantized by
# a native llama-quantize, and llama.cpp's teacher-forced next-token probabilities on it (top 20
# per position, through the peer harness) for the 64-token sequence t_i = (37 + 101 i) mod 512.
# Usage: [LLAMA_BIN=/tmp/llama-native/build/bin] regen.sh path/to/ridge
# (a native llama.cpp: ../shared/peer/README.md; LLAMA_BIN holds llama-quantize and its libraries)
set -e
ridge=${1:?usage: regen.sh path/to/ridge}
here=$(cd "$(dirname "$0")" && pwd)
bin=${LLAMA_BIN:-/tmp/llama-native/build/bin}
peer=${PEER:-$HOME/.cache/llamacpp-peer/llamacpp-peer.mjs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$(python3 -c "print(','.join(str((37 + 101 * i) % 512) for i in range(64)))")
for case in tiny-qwen3:iq4_nl tiny-llama:iq4_nl tiny-qwen3-256:iq4_xs; do
  preset=${case%%:*} type=${case#*:}
  "$ridge" synth --preset "$preset" --type f32 --seed 7 -t 1 -o "$tmp/f32.gguf" > /dev/null
  out="$here/$preset-$type.gguf"
  LD_LIBRARY_PATH="$bin" "$bin/llama-quantize" "$tmp/f32.gguf" "$out" "$(echo "$type" | tr a-z A-Z)" > /dev/null 2>&1
  node "$peer" probs --model "$out" --tokens "$tokens" --top 20 > "$tmp/probs.jsonl"
  python3 - "$tokens" "$tmp/probs.jsonl" > "$here/$preset-$type.json" <<'PY'
import json, sys
tokens, path = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
assert [r["pos"] for r in rows] == list(range(len(rows)))
print(json.dumps({"tokens": [int(t) for t in tokens.split(",")], "top": [r["top"] for r in rows]}, separators=(",", ":")))
PY
  echo "$preset $type: $(stat -c %s "$out") bytes"
done
