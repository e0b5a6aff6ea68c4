#!/bin/sh
# Regenerates peer_probs/<preset>-<type>.json: llama.cpp's teacher-forced next-token
# probabilities (top 20 per position, through the peer harness) on the synthetic models that
# `ridge synth --seed 7` writes, for the 64-token sequence t_i = (37 + 101 i) mod 512.
# Usage: [PRESETS='tiny-llama ...'] [TYPES='f32 ...'] [SEED=7] regen_peer_probs.sh path/to/ridge
set -e
ridge=${1:?usage: regen_peer_probs.sh path/to/ridge}
here=$(cd "$(dirname "$0")" && pwd)
peer=${PEER:-$HOME/.cache/llamacpp-peer/llamacpp-peer.mjs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$(python3 -c "print(','.join(str((37 + 101 * i) % 512) for i in range(64)))")
for preset in ${PRESETS:-tiny-llama tiny-qwen2 tiny-qwen3 tiny-llama3}; do
  for type in ${TYPES:-f32 f16 bf16 q8_0}; do
    f="$tmp/$preset-$type.gguf"
    "$ridge" synth --preset "$preset" --type "$type" --seed "${SEED:-7}" -t 1 -o "$f" > /dev/null
    node "$peer" probs --model "$f" --tokens "$tokens" --top 20 > "$tmp/probs.jsonl"
    python3 - "$preset" "$type" "$tokens" "$(stat -c %s "$f")" "$tmp/probs.jsonl" \
        > "$here/peer_probs/$preset-$type.json" <<'PY'
import json, os, sys
preset, type_, tokens, size, path = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
assert [r["pos"] for r in rows] == list(range(len(rows)))
print(json.dumps({"preset": preset, "type": type_, "seed": int(os.environ.get("SEED", "7")), "file_bytes": int(size),
                  "tokens": [int(t) for t in tokens.split(",")],
                  "top": [r["top"] for r in rows]}, separators=(",", ":")))
PY
    echo "$preset $type"
  done
done
