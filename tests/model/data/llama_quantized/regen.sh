#!/bin/sh
# Regenerates <preset>-<type>.gguf and .json here: ridge synth's f32 model (seed 7) quantized by
# a native llama-quantize, and llama.cpp's teacher-forced next-token probabilities on it (top 20
# per position, through the peer harness) for the 64-token sequence t_i = (37 + 101 i) mod 512.
# The grid-* files put the grid formats (IQ1-IQ3, TQ) on chosen tensors of tiny-qwen3-256,
# quantized with an importance matrix that llama-imatrix computes on a fixed random word text
# (llama-quantize requires one for the 1- and 2-bit formats).
# Usage: [LLAMA_BIN=/tmp/llama-native/build/bin] regen.sh path/to/ridge
# (a native llama.cpp: ../shared/peer/README.md; LLAMA_BIN holds llama-quantize, llama-imatrix
# and their libraries)
set -e
ridge=${1:?usage: regen.sh path/to/ridge}
here=$(cd "$(dirname "$0")" && pwd)
bin=${LLAMA_BIN:-/tmp/llama-native/build/bin}
peer=${PEER:-$HOME/.cache/llamacpp-peer/llamacpp-peer.mjs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$(python3 -c "print(','.join(str((37 + 101 * i) % 512) for i in range(64)))")
# The llama-quantize arguments of each grid-* file (its base type Q4_K is not used by any tensor).
grid_args() {
  case $1 in
    grid-iq2) echo --token-embedding-type iq2_s --tensor-type attn_q=iq2_xxs --tensor-type attn_output=iq2_xxs \
                   --tensor-type attn_k=iq2_s --tensor-type attn_v=iq2_s --tensor-type ffn=iq2_xs ;;
    grid-iq3) echo --token-embedding-type iq3_xxs --tensor-type attn=iq3_s --tensor-type ffn=iq3_xxs ;;
    grid-iq1-tq) echo --token-embedding-type tq2_0 --tensor-type attn_q=tq2_0 --tensor-type attn_output=tq1_0 \
                      --tensor-type attn_k=tq1_0 --tensor-type attn_v=tq2_0 --tensor-type ffn_up=iq1_s \
                      --tensor-type ffn_gate=iq1_s --tensor-type ffn_down=iq1_m ;;
  esac
}
for case in tiny-qwen3:iq4_nl tiny-llama:iq4_nl tiny-qwen3-256:iq4_xs tiny-qwen3-256:grid-iq2 \
            tiny-qwen3-256:grid-iq3 tiny-qwen3-256:grid-iq1-tq; do
  preset=${case%%:*} type=${case#*:}
  "$ridge" synth --preset "$preset" --type f32 --seed 7 -t 1 -o "$tmp/f32.gguf" > /dev/null
  out="$here/$preset-$type.gguf"
  case $type in
    grid-*)
      python3 -c "import random; random.seed(1); w='the cat sat on a mat and dog ran far away from home it was late'.split(); print(' '.join(random.choice(w) for _ in range(3000)))" > "$tmp/text.txt"
      LD_LIBRARY_PATH="$bin" "$bin/llama-imatrix" -m "$tmp/f32.gguf" -f "$tmp/text.txt" -o "$tmp/imatrix.gguf" -c 128 --chunks 20 -t 1 > /dev/null 2>&1
      # shellcheck disable=SC2046
      LD_LIBRARY_PATH="$bin" "$bin/llama-quantize" --imatrix "$tmp/imatrix.gguf" $(grid_args "$type") "$tmp/f32.gguf" "$out" Q4_K > /dev/null 2>&1 ;;
    *) LD_LIBRARY_PATH="$bin" "$bin/llama-quantize" "$tmp/f32.gguf" "$out" "$(echo "$type" | tr a-z A-Z)" > /dev/null 2>&1 ;;
  esac
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
