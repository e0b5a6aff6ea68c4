#!/usr/bin/env bash
# ctest entry: two `ridge serve` replicas on loopback behind a small prefix-aware router
# (router.py): every request of a shared prompt prefix lands on the same replica, whose prefix
# cache then serves that prefix (vllm:prefix_cache_hits_total > 0 there), and each replica's
# vLLM-named metrics count what it served. usage: replicas_test.sh RIDGE_BINARY. Exit 77
# (skipped) without python3 or curl.
set -euo pipefail
ridge=$1
here="$(cd "$(dirname "$0")" && pwd)"
command -v python3 >/dev/null && command -v curl >/dev/null || { echo "SKIP: python3 or curl not found"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ridge" synth --preset tiny-qwen3 --type q8_0 --seed 7 -t 1 -o "$tmp/m.gguf" >/dev/null
ports=()
for r in 0 1; do
  : >"$tmp/out$r"
  "$ridge" serve -m "$tmp/m.gguf" --port 0 --max-model-len 512 -t 1 --model-name tiny >"$tmp/out$r" 2>"$tmp/err$r" &
  pids+=($!)
done
for r in 0 1; do
  port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/out$r")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$tmp/err$r"; fail "replica $r did not start"; }
  ports+=("$port")
done
: >"$tmp/router_port"
python3 "$here/router.py" 200 "http://127.0.0.1:${ports[0]}" "http://127.0.0.1:${ports[1]}" >"$tmp/router_port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/router_port" ] && break; sleep 0.05; done
router="http://127.0.0.1:$(cat "$tmp/router_port")"

# Two system prompts of ~250 characters, each followed by four different questions.
prefix() { python3 -c "import random; random.seed($1); w='the a of model cache token bytes memory speed'.split(); print(' '.join(random.choice(w) for _ in range(45)))"; }
declare -A seen
for p in 1 2; do
  pre=$(prefix "$p")
  for q in 1 2 3 4; do
    body=$(python3 -c 'import json,sys; print(json.dumps({"model":"tiny","messages":[{"role":"system","content":sys.argv[1]},{"role":"user","content":"question "+sys.argv[2]}],"max_tokens":2}))' "$pre" "$q")
    replica=$(curl -s -D - -o "$tmp/body" "$router/v1/chat/completions" -H 'Content-Type: application/json' -d "$body" |
      tr -d '\r' | sed -n 's/^X-Ridge-Replica: //p')
    grep -q '"choices"' "$tmp/body" || fail "prefix $p question $q: $(cat "$tmp/body")"
    [ -n "$replica" ] || fail "no replica header"
    if [ -n "${seen[$p]:-}" ] && [ "${seen[$p]}" != "$replica" ]; then fail "prefix $p went to replicas ${seen[$p]} and $replica"; fi
    seen[$p]=$replica
  done
done
# The replica that took each prefix served it from its prefix cache after the first request.
metric() { curl -s "http://127.0.0.1:${ports[$1]}/metrics" | sed -n "s/^$2{model_name=\"tiny\"} //p"; }
for p in 1 2; do
  hits=$(metric "${seen[$p]}" vllm:prefix_cache_hits_total)
  [ "${hits%.*}" -gt 0 ] || fail "replica ${seen[$p]} (prefix $p): vllm:prefix_cache_hits_total = $hits"
done
total=0
for r in 0 1; do
  n=$(metric "$r" vllm:prompt_tokens_total)
  [ -n "$n" ] || fail "replica $r exports no vllm:prompt_tokens_total"
  total=$((total + ${n%.*}))
  [ "$(metric "$r" vllm:num_requests_running)" = 0 ] || fail "replica $r: requests still running"
  curl -s "http://127.0.0.1:${ports[$r]}/metrics" >"$tmp/metrics$r"
  grep -q '^vllm:cache_config_info{model_name="tiny",block_size="[0-9]*",num_gpu_blocks="[0-9]*"} 1$' "$tmp/metrics$r" ||
    fail "replica $r: no vllm:cache_config_info"
done
[ "$total" -gt 0 ] || fail "no prompt tokens counted"
echo "replicas: prefix 1 -> replica ${seen[1]}, prefix 2 -> replica ${seen[2]}; OK"
