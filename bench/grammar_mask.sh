#!/usr/bin/env bash
# Structured outputs' cost per token beside the decode step it rides on: a Qwen3-0.6B-shaped
# synthetic model with the qwen2 vocabulary (151,646 tokens) decoding at batch 1 (`ridge bench`,
# median inter-token latency), and the grammar mask (fill_mask + accept_token per token on the
# same vocabulary, bench/grammar_bench), cold (a new grammar) and warm (a grammar seen before).
# usage: bench/grammar_mask.sh [BUILD_DIR=build] [TYPE=q8_0] [THREADS=2]
set -euo pipefail
build=${1:-build}
type=${2:-q8_0}
threads=${3:-2}
here="$(cd "$(dirname "$0")" && pwd)"
vocab="$here/../../shared/vocab/ggml-vocab-qwen2.gguf"
[ -f "$vocab" ] || { echo "needs $vocab (../shared)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/ridge" synth --preset qwen3-0.6b --type "$type" --vocab "$vocab" -t "$threads" \
    -o "$tmp/m.gguf" >/dev/null 2>&1
"$build/ridge" bench -m "$tmp/m.gguf" --batch 1 --ctx 128 -n 64 -t "$threads" --json --no-probe \
    >"$tmp/bench.json" 2>/dev/null
"$build/bench/grammar_bench" --benchmark_format=json --benchmark_filter='Cold|Warm' \
    >"$tmp/grammar.json" 2>/dev/null
python3 - "$tmp/bench.json" "$tmp/grammar.json" "$type" "$threads" <<'PY'
import json, sys
bench, grammar, type_, threads = sys.argv[1:]
p = json.load(open(bench))["results"][0]["points"][0]
step_ms = p["itl_ms"]["p50"]
print(f"decode step, Qwen3-0.6B {type_}, batch 1, ctx 128, {threads} threads: "
      f"{step_ms:.2f} ms (median), {p['decode_tok_s']:.1f} tok/s")
for b in json.load(open(grammar))["benchmarks"]:
    per_token_ms = b["cpu_time"] / b["tokens"] if "tokens" in b else None
    if per_token_ms is None:
        continue
    print(f"{b['name']:<24} {per_token_ms * 1e3:8.1f} us/token = {100 * per_token_ms / step_ms:5.2f}% of the step")
PY
