#!/usr/bin/env bash
# ctest entry: SSE framing and HTTP-level limits of `ridge serve` seen by curl.
# usage: curl_sse_test.sh RIDGE_BINARY SHARED_DIR. Exit 77 (skipped) without curl or the model.
set -euo pipefail
binary=$1
model="$2/models/stories260K/stories260K.gguf"
command -v curl >/dev/null || { echo "SKIP: curl not found"; exit 77; }
[ -f "$model" ] || { echo "SKIP: $model not found"; exit 77; }
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The key comes from the environment (kept out of ps); the checks below need it.
RIDGE_API_KEY=k "$binary" serve -m "$model" --port 0 --max-body 4096 --model-name stories \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 200); do grep -q "listening on" "$tmp/out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/out")
[ -n "$port" ] || { cat "$tmp/err"; fail "server did not start"; }
base="http://127.0.0.1:$port"
for _ in $(seq 200); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] && break; sleep 0.05; done
auth=(-H "Authorization: Bearer k" -H "Content-Type: application/json")

# Streaming: headers, one "data: " line per event, blank line after each, [DONE] last.
curl -sN -D "$tmp/headers" "${auth[@]}" "$base/v1/chat/completions" \
  -d '{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}' \
  >"$tmp/sse"
grep -qi '^content-type: text/event-stream' "$tmp/headers" || fail "content-type: $(cat "$tmp/headers")"
grep -qi '^transfer-encoding: chunked' "$tmp/headers" || fail "not chunked"
# Framing checked with grep/awk only (no python/node needed).
[ "$(tail -c 14 "$tmp/sse" | tr '\n' '|')" = "data: [DONE]||" ] || fail "last event is not [DONE]"
awk 'NR % 2 == 1 && !/^data: / { bad = 1 } NR % 2 == 0 && $0 != "" { bad = 1 }
     END { exit bad || NR < 8 }' "$tmp/sse" || fail "SSE framing: $(head -c 400 "$tmp/sse")"
head -1 "$tmp/sse" | grep -q '"delta":{"content":"","role":"assistant"}' || fail "role chunk"
grep -c '"object":"chat.completion.chunk"' "$tmp/sse" | grep -qv '^0$' || fail "chunk object"
grep -q '"choices":\[\],.*"usage":{"completion_tokens":[1-9]' "$tmp/sse" || fail "usage chunk"
grep -q '"finish_reason":"\(length\|stop\)"' "$tmp/sse" || fail "finish_reason"

code() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
[ "$(code "$base/v1/models")" = 401 ] || fail "no key: expected 401"
[ "$(code -H 'Authorization: Bearer nope' "$base/v1/models")" = 401 ] || fail "wrong key: expected 401"
[ "$(code "${auth[@]}" "$base/v1/models")" = 200 ] || fail "models"
head -c 8000 /dev/zero | tr '\0' 'a' >"$tmp/big"
[ "$(code "${auth[@]}" --data-binary @"$tmp/big" "$base/v1/completions")" = 413 ] || fail "413"
grep -q '"error"' "$tmp/body" || fail "413 body is not an error object"
[ "$(code "${auth[@]}" -d '{"model": ' "$base/v1/completions")" = 400 ] || fail "malformed JSON"
[ "$(code "${auth[@]}" -d '{"model":"stories","prompt":"x","top_k":"a"}' "$base/v1/completions")" = 400 ] || fail "wrong type"
grep -q '"param":"top_k"' "$tmp/body" || fail "param not named: $(cat "$tmp/body")"
[ "$(code "$base/metrics")" = 200 ] && grep -q '^ridge_kv_blocks_used 0$' "$tmp/body" || fail "metrics"

# SIGTERM under load: streams in flight finish (each ends with [DONE], never "abort"), exit 0.
for i in 1 2 3 4; do
  curl -sN "${auth[@]}" "$base/v1/completions" \
    -d '{"model":"stories","prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true}' \
    >"$tmp/load$i" &
done
sleep 0.2
kill -TERM "$pid"
wait "$pid" && status=0 || status=$?
pid=""
[ "$status" = 0 ] || fail "exit status after SIGTERM: $status"
wait
for i in 1 2 3 4; do
  [ "$(tail -c 14 "$tmp/load$i" | tr '\n' '|')" = "data: [DONE]||" ] || fail "stream $i under SIGTERM: $(tail -c 300 "$tmp/load$i")"
  ! grep -q '"abort"' "$tmp/load$i" || fail "stream $i ended with finish_reason abort"
done
echo "curl SSE/limits test passed"
