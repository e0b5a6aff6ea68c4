#!/usr/bin/env bash
# Engine benchmarks (numbers in docs/engine.md). Usage:
#   bench/engine_bench.sh [throughput|scaling|prefix|hybrid_prefix|chunked|all]
# Environment: RIDGE (binary, default build/ridge), MODEL (default /tmp/q06-q8.gguf, made with
# `ridge synth --preset qwen3-0.6b --type q8_0`), THREADS (default 2), PEER (llama.cpp harness).
# Timings on a shared machine are noisy: rerun and quote medians.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RIDGE=${RIDGE:-$here/../build/ridge}
MODEL=${MODEL:-/tmp/q06-q8.gguf}
THREADS=${THREADS:-2}
PEER=${PEER:-/root/.cache/llamacpp-peer/llamacpp-peer.mjs}
gen="python3 $here/engine_prompts.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$MODEL" ] || "$RIDGE" synth --preset qwen3-0.6b --type q8_0 -o "$MODEL"

throughput() {  # 64 requests, prompt and output lengths uniform in [32, 256]
  $gen mixed 64 32 256 1 > "$tmp/mixed.jsonl"
  echo "== ridge batch: 64 requests, lengths uniform in [32, 256]"
  "$RIDGE" batch -q -m "$MODEL" --prompts "$tmp/mixed.jsonl" -t "$THREADS" --max-seqs 64 --max-model-len 512
  if [ -f "$PEER" ]; then
    echo "== llama.cpp batch (peer): 64 sequences of the mean lengths (p 144, n 144)"
    node "$PEER" batch --model "$MODEL" --threads "$THREADS" --seqs 64 -p 144 -n 144
  fi
}

scaling() {  # steady decode throughput at batch 1..64 (prompt 32, 64 new tokens each)
  for b in 1 2 4 8 16 32 64; do
    $gen fixed "$b" 32 64 > "$tmp/fixed.jsonl"
    "$RIDGE" batch -q -m "$MODEL" --prompts "$tmp/fixed.jsonl" -t "$THREADS" --max-seqs 64 --max-model-len 128 \
      --out "$tmp/fixed.out" | sed -n "s/^steady decode: /ridge batch $b: /p"
    if [ -f "$PEER" ]; then  # llama.cpp, same shape, same run
      node "$PEER" batch --model "$MODEL" --threads "$THREADS" --seqs "$b" -p 32 -n 64 2>/dev/null |
        tail -n 1 | sed "s/^/llama.cpp batch $b: /"
    fi
  done
}

prefix() {  # 32 requests sharing a 1000-token system prompt: TTFT with the prefix cache on / off
  $gen shared 32 1000 24 8 > "$tmp/shared.jsonl"
  for flag in "" --no-prefix-caching; do
    echo "== prefix caching ${flag:-on}"
    "$RIDGE" batch -q -m "$MODEL" --prompts "$tmp/shared.jsonl" -t "$THREADS" --max-seqs 32 --max-model-len 1100 $flag |
      grep -E "TTFT|prefix cache|throughput"
  done
}

hybrid_prefix() {  # 8 requests sharing a 1000-token system prompt on a hybrid model: states kept or not
  local model=${HYBRID_MODEL:-/tmp/q35-08b-q8.gguf}
  [ -f "$model" ] || "$RIDGE" synth --preset qwen3.5-0.8b --type q8_0 -o "$model"
  $gen shared 8 1000 24 8 > "$tmp/shared8.jsonl"
  for flag in "--state-cache 0" ""; do
    echo "== hybrid, ${flag:-states kept (default)}"
    "$RIDGE" batch -q -m "$model" --prompts "$tmp/shared8.jsonl" -t "$THREADS" --max-seqs 8 --max-model-len 1100 $flag |
      grep -E "requests|TTFT|prefix cache"
  done
}

chunked() {  # 8 sequences decoding; a 4000-token prompt arrives after 2 s (serve's prompt cap)
  $gen chunked 8 32 "${DECODE_TOKENS:-96}" 4000 2.0 > "$tmp/chunked.jsonl"
  for budget in ${BUDGETS:-16 64 512}; do
    echo "== max-batched-tokens $budget"
    "$RIDGE" batch -q -m "$MODEL" --prompts "$tmp/chunked.jsonl" -t "$THREADS" --max-seqs 16 --max-model-len 4096 \
      --max-batched-tokens "$budget" ${EXTRA_FLAGS:---max-prefill-with-decodes 16} --out "$tmp/chunked.out" | grep -E "inter-token|TTFT"
    python3 - "$tmp/chunked.out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])][:-1]  # the 8 decoding requests
p50 = sorted(r["itl_p50_ms"] for r in rows)[len(rows) // 2]
p99 = max(r["itl_p99_ms"] for r in rows)
print(f"decoders: ITL p50 {p50:.1f} ms, worst p99 {p99:.1f} ms, ratio {p99 / p50:.2f}")
PY
  done
}

case "${1:-all}" in
  throughput) throughput ;;
  scaling) scaling ;;
  prefix) prefix ;;
  hybrid_prefix) hybrid_prefix ;;
  chunked) chunked ;;
  all) throughput; scaling; prefix; hybrid_prefix; chunked ;;
  *) echo "usage: $0 [throughput|scaling|prefix|hybrid_prefix|chunked|all]" >&2; exit 2 ;;
esac
