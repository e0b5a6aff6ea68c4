#!/usr/bin/env bash
# /v1/embeddings against llama.cpp's embeddings (node-llama-cpp of the peer install) on synthetic
# qwen3 models with last, mean and cls pooling: cosine similarity of every vector >= 0.9999,
# vectors of length 1, the same bits whether an input is embedded alone or batched with others,
# base64 and dimensions forms. usage: embeddings_peer_test.sh RIDGE_BINARY. Exit 77 (skipped)
# without node or the peer install (../shared/peer/install.sh).
set -euo pipefail
ridge=$1
here="$(cd "$(dirname "$0")" && pwd)"
peer_dir=$(dirname "${RIDGE_PEER:-$HOME/.cache/llamacpp-peer/llamacpp-peer.mjs}")
if ! command -v node >/dev/null || [ ! -d "$peer_dir/node_modules/node-llama-cpp" ]; then
  echo "SKIP: the llama.cpp peer is not installed (../shared/peer/install.sh)"; exit 77
fi
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

for pooling in last mean cls; do
  model="$tmp/$pooling.gguf"
  "$ridge" synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 --pooling "$pooling" -o "$model" >/dev/null
  # 32 tokens per step: the 100-token input is pooled over four chunks. The log files exist
  # before the server starts: the background job opens them only when it is scheduled.
  : >"$tmp/out"
  : >"$tmp/err"
  "$ridge" serve -m "$model" --embeddings --port 0 --max-model-len 256 -t 1 --max-batched-tokens 32 \
      >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$tmp/err"; echo "FAIL: serve did not start"; exit 1; }
  python3 - "$port" "$model" "$peer_dir" "$here/peer/llamacpp_embed.mjs" "$pooling" <<'PY'
import base64, json, math, struct, subprocess, sys, urllib.request
port, model, peer_dir, script, pooling = sys.argv[1:]
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                 data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())
inputs = [[(37 + 101 * i + 13 * k) % 512 for i in range(n)] for k, n in enumerate([40, 7, 1, 100])]
batched = post({"input": inputs})
assert [d["index"] for d in batched["data"]] == list(range(len(inputs)))
assert batched["usage"]["prompt_tokens"] == sum(map(len, inputs)), batched["usage"]
for k, toks in enumerate(inputs):
    mine = batched["data"][k]["embedding"]
    alone = post({"input": toks})["data"][0]["embedding"]
    assert alone == mine, f"{pooling} input {k}: batched and alone differ"
    assert abs(math.sqrt(sum(x * x for x in mine)) - 1) < 1e-5, "not normalised"
    ref = json.loads(subprocess.run(["node", script, peer_dir, model, ",".join(map(str, toks))],
                                    check=True, capture_output=True, text=True).stdout)
    assert len(ref) == len(mine), (len(ref), len(mine))
    norm = math.sqrt(sum(x * x for x in ref))
    cos = sum(a * b for a, b in zip(mine, ref)) / norm
    print(f"{pooling}: input {k} ({len(toks)} tokens): cosine to llama.cpp {cos:.7f}")
    assert cos >= 0.9999, f"{pooling} input {k}: cosine {cos}"
b64 = post({"input": inputs[0], "encoding_format": "base64"})["data"][0]["embedding"]
raw = base64.b64decode(b64)
floats = list(struct.unpack(f"<{len(raw) // 4}f", raw))
assert all(abs(a - b) < 1e-7 for a, b in zip(floats, batched["data"][0]["embedding"]))
short = post({"input": inputs[0], "dimensions": 8})["data"][0]["embedding"]
assert len(short) == 8 and abs(math.sqrt(sum(x * x for x in short)) - 1) < 1e-5
PY
  # Bad input: a 400 naming the field.
  for case in 'input:{}' 'input:{"input": []}' 'input:{"input": [[5, -1]]}' 'input:{"input": ""}' \
              'dimensions:{"input": "x", "dimensions": 0}' \
              'encoding_format:{"input": "x", "encoding_format": "hex"}' \
              'truncate:{"input": "x", "truncate": true}'; do
    want=${case%%:*}
    body=${case#*:}
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port/v1/embeddings" -d "$body")
    [ "$code" = 400 ] && grep -q "\"param\":\"$want\"" "$tmp/body" ||
      { cat "$tmp/body"; echo "FAIL: $body gave $code, not a 400 naming $want"; exit 1; }
  done
  # Generation endpoints are refused by an embedding server, with a 400 naming the route to use.
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
              -d '{"prompt": "x", "max_tokens": 2}')
  [ "$code" = 400 ] && grep -q '/v1/embeddings' "$tmp/body" || { cat "$tmp/body"; echo "FAIL: completions on an embedding server: $code"; exit 1; }
  kill "$pid"; wait "$pid" || true; pid=
done
echo "embeddings: OK"
