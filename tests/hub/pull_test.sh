#!/usr/bin/env bash
# ctest entry: `ridge pull` and -hf against a local imitation of the Hugging Face hub
# (fake_hub.py): quant selection, redirects, a dropped connection resumed with a Range request, a
# partial file resumed, a wrong checksum, a private repository with and without HF_TOKEN, split
# files (merged into one), a checkpoint repository (safetensors: a folder), the cache (no second
# transfer, --list, use when the hub is unreachable, not when it answers with a garbled listing)
# and bad input.
# usage: pull_test.sh RIDGE_BINARY. Exit 77 (skipped) without python3.
set -euo pipefail
ridge=$1
here="$(cd "$(dirname "$0")" && pwd)"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap "kill \$pid 2>/dev/null; echo kept $tmp" EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ridge" synth --preset tiny-qwen3 --type q8_0 --seed 7 -t 1 -o "$tmp/q8.gguf" >/dev/null
"$ridge" synth --preset tiny-qwen3 --type q4_k_m --seed 7 -t 1 -o "$tmp/q4.gguf" >/dev/null
python3 "$here/gguf_split.py" "$tmp/q8.gguf" 3 "$tmp/split"
head -c 200000 /dev/urandom > "$tmp/part2"
python3 "$here/make_checkpoint.py" "$tmp/ckpt"
echo "# a model card" > "$tmp/readme"
cat > "$tmp/hub.json" <<JSON
{"repos": {
  "test/tiny": {"files": {"tiny-Q8_0.gguf": "$tmp/q8.gguf", "tiny-Q4_K_M.gguf": "$tmp/q4.gguf",
                          "mmproj-tiny-f16.gguf": "$tmp/part2", "README.md": "$tmp/readme"}},
  "test/flaky": {"files": {"model.Q4_K_M.gguf": "$tmp/q4.gguf"}, "drop_once": ["model.Q4_K_M.gguf"]},
  "test/corrupt": {"files": {"model-Q4_K_M.gguf": "$tmp/q4.gguf"}, "wrong_sha": ["model-Q4_K_M.gguf"]},
  "test/private": {"files": {"only.gguf": "$tmp/q8.gguf"}, "private": true},
  "test/split": {"files": {"Q8_0/big-Q8_0-00001-of-00003.gguf": "$tmp/split-00001-of-00003.gguf",
                           "Q8_0/big-Q8_0-00002-of-00003.gguf": "$tmp/split-00002-of-00003.gguf",
                           "Q8_0/big-Q8_0-00003-of-00003.gguf": "$tmp/split-00003-of-00003.gguf"}},
  "test/partial": {"files": {"m-Q8_0.gguf": "$tmp/q8.gguf"}},
  "test/garbled": {"files": {"g-Q8_0.gguf": "$tmp/q8.gguf"}, "garbled": true},
  "test/ckpt": {"files": {"config.json": "$tmp/ckpt/config.json", "model.safetensors": "$tmp/ckpt/model.safetensors",
                          "tokenizer.json": "$tmp/ckpt/tokenizer.json", "tokenizer_config.json": "$tmp/ckpt/tokenizer_config.json",
                          "README.md": "$tmp/readme", "original/consolidated.pth": "$tmp/part2"}},
  "test/notckpt": {"files": {"config.json": "$tmp/ckpt/config.json", "README.md": "$tmp/readme"}}
}}
JSON
python3 "$here/fake_hub.py" "$tmp/hub.json" "$tmp/log" > "$tmp/port" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
[ -n "$port" ] || fail "the fake hub did not start"
export HF_ENDPOINT="http://127.0.0.1:$port" RIDGE_MODELS="$tmp/cache"
unset HF_TOKEN
blob_gets() { grep -c '^GET /blobs/' "$tmp/log" || true; }

# The default quantization (Q4_K_M), never the projector; the bytes are the served file's.
out=$("$ridge" pull test/tiny 2>"$tmp/err")
[ "$out" = "$tmp/cache/test/tiny/tiny-Q4_K_M.gguf" ] || fail "default pick: $out"
cmp -s "$out" "$tmp/q4.gguf" || fail "tiny-Q4_K_M.gguf differs from the served file"
grep -q "sha256 checked" "$tmp/err" || fail "no completion line: $(cat "$tmp/err")"
[ ! -e "$out.part" ] || fail "a .part file was left"
# A named quantization, case-insensitive; then a cache hit transfers nothing.
out=$("$ridge" pull test/tiny:q8_0 -q)
[ "$out" = "$tmp/cache/test/tiny/tiny-Q8_0.gguf" ] && cmp -s "$out" "$tmp/q8.gguf" || fail "q8_0 pick: $out"
before=$(blob_gets)
"$ridge" pull test/tiny:Q8_0 -q >/dev/null
[ "$(blob_gets)" = "$before" ] || fail "a cached file was downloaded again"
# A quantization the repository lacks: one line naming what it has.
if "$ridge" pull test/tiny:Q5_K_M 2>"$tmp/err"; then fail "Q5_K_M should fail"; fi
grep -q "Q4_K_M, Q8_0" "$tmp/err" || fail "missing quant message: $(cat "$tmp/err")"
# -hf on a model command runs the pulled model.
"$ridge" run -hf test/tiny:Q8_0 -p hello -n 4 -t 1 >"$tmp/run" 2>"$tmp/err" || fail "run -hf: $(cat "$tmp/err")"
grep -q "decode" "$tmp/err" || fail "run -hf printed no decode line"
"$ridge" inspect -hf test/tiny:Q8_0 >"$tmp/inspect" || fail "inspect -hf failed"
grep -q "qwen3" "$tmp/inspect" || fail "inspect -hf: $(head -3 "$tmp/inspect")"

# A connection dropped halfway: resumed with a Range request, the same bytes in the end.
out=$("$ridge" pull test/flaky -q) || fail "flaky pull failed"
cmp -s "$out" "$tmp/q4.gguf" || fail "flaky: the resumed file differs"
grep -q "^GET /blobs/.* bytes=[1-9]" "$tmp/log" || fail "flaky: no Range request after the drop"
# A partial file from an earlier, killed run is resumed, not fetched again.
mkdir -p "$tmp/cache/test/partial"
head -c 5000 "$tmp/q8.gguf" > "$tmp/cache/test/partial/m-Q8_0.gguf.part"
out=$("$ridge" pull test/partial -q) || fail "partial pull failed"
cmp -s "$out" "$tmp/q8.gguf" || fail "partial: the resumed file differs"
grep -q "^GET /blobs/.* bytes=5000-" "$tmp/log" || fail "partial: not resumed at byte 5000"

# A wrong checksum: an error, and nothing at the final path (the .part is deleted).
if "$ridge" pull test/corrupt -q 2>"$tmp/err"; then fail "corrupt should fail"; fi
grep -q "sha256" "$tmp/err" || fail "corrupt message: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/cache/test/corrupt" 2>/dev/null)" ] || fail "corrupt: files were left: $(ls "$tmp/cache/test/corrupt")"

# A private repository: 401 names HF_TOKEN; with the token it downloads.
if "$ridge" pull test/private -q 2>"$tmp/err"; then fail "private without a token should fail"; fi
grep -q "HF_TOKEN" "$tmp/err" || fail "401 message: $(cat "$tmp/err")"
out=$(HF_TOKEN=secret "$ridge" pull test/private -q) || fail "private with a token failed"
cmp -s "$out" "$tmp/q8.gguf" || fail "private: bytes differ"

# Split files: every part, in a sub-folder, merged into the one file they were cut from (the
# parts deleted), which runs; a second pull transfers nothing.
out=$("$ridge" pull test/split:Q8_0 -q) || fail "split pull failed"
[ "$out" = "$tmp/cache/test/split/Q8_0/big-Q8_0.gguf" ] || fail "split path: $out"
cmp -s "$out" "$tmp/q8.gguf" || fail "split: the merged file differs from the original"
[ -z "$(ls "$tmp/cache/test/split/Q8_0" | grep -- '-of-')" ] || fail "split: parts left: $(ls "$tmp/cache/test/split/Q8_0")"
before=$(blob_gets)
"$ridge" run -hf test/split:Q8_0 -p hello -n 2 -t 1 >/dev/null 2>"$tmp/err" || fail "run -hf split: $(cat "$tmp/err")"
[ "$(blob_gets)" = "$before" ] || fail "split: a merged model was downloaded again"

# A checkpoint repository (no GGUF; config.json, safetensors, tokenizer): its files into a folder,
# which every -m takes; not its README or sub-folders; a second pull transfers nothing; :QUANT does
# not apply; a repository that is neither is one line naming what it lacks.
out=$("$ridge" pull test/ckpt -q) || fail "checkpoint pull failed"
[ "$out" = "$tmp/cache/test/ckpt" ] || fail "checkpoint path: $out"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do
  cmp -s "$out/$f" "$tmp/ckpt/$f" || fail "checkpoint: $f differs"
done
[ ! -e "$out/README.md" ] && [ ! -e "$out/original" ] || fail "checkpoint: took files a model does not need: $(ls "$out")"
before=$(blob_gets)
"$ridge" run -hf test/ckpt -p hello -n 4 -t 1 >/dev/null 2>"$tmp/err" || fail "run -hf checkpoint: $(cat "$tmp/err")"
[ "$(blob_gets)" = "$before" ] || fail "checkpoint: downloaded again"
set +e
"$ridge" pull test/ckpt:Q4_K_M -q 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "checkpoint" "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 1 ] || fail "checkpoint :QUANT: exit $rc, $(cat "$tmp/err")"
if "$ridge" pull test/notckpt -q 2>"$tmp/err"; then fail "a repository without weights should fail"; fi
grep -q "safetensors" "$tmp/err" || fail "not a checkpoint: $(cat "$tmp/err")"

# --list shows the complete models.
"$ridge" pull --list > "$tmp/list"
grep -q "test/tiny/tiny-Q8_0.gguf" "$tmp/list" && grep -q "test/split/Q8_0/big-Q8_0.gguf" "$tmp/list" &&
  grep -q "test/ckpt/ (checkpoint)" "$tmp/list" || fail "--list: $(cat "$tmp/list")"
! grep -q corrupt "$tmp/list" || fail "--list shows the corrupt download"

# A hub that answers with something other than a file list: an error, even with the model cached
# (only a hub that does not answer falls back to the cache).
mkdir -p "$tmp/cache/test/garbled"
for f in "$tmp/cache/test/tiny/tiny-Q8_0.gguf"*; do cp "$f" "$tmp/cache/test/garbled/g-Q8_0${f#"$tmp/cache/test/tiny/tiny-Q8_0"}"; done
if "$ridge" pull test/garbled:Q8_0 -q 2>"$tmp/err"; then fail "a garbled listing should fail"; fi
grep -q "not a file list" "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 1 ] || fail "garbled: $(cat "$tmp/err")"

# The hub unreachable: a cached model is used with a note, an uncached one is an error.
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
out=$("$ridge" pull test/tiny:Q8_0 -q 2>"$tmp/err") || fail "offline cached pull failed: $(cat "$tmp/err")"
[ "$out" = "$tmp/cache/test/tiny/tiny-Q8_0.gguf" ] && grep -q "cannot be reached" "$tmp/err" || fail "offline: $out $(cat "$tmp/err")"
if "$ridge" pull test/absent -q 2>"$tmp/err"; then fail "offline uncached should fail"; fi
out=$("$ridge" pull test/ckpt -q 2>"$tmp/err") || fail "offline cached checkpoint failed: $(cat "$tmp/err")"
[ "$out" = "$tmp/cache/test/ckpt" ] && grep -q "cached checkpoint" "$tmp/err" || fail "offline checkpoint: $out $(cat "$tmp/err")"

# Bad input: usage errors (exit 2), one line each.
for bad in notarepo "a/b/c" "../x" "user/repo:Q4 K"; do
  set +e
  "$ridge" pull "$bad" 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] || fail "'$bad': exit $rc, $(cat "$tmp/err")"
done
for bad in "../x" "a b" "main?x=1"; do
  set +e
  "$ridge" pull test/tiny --revision "$bad" 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q -- "--revision" "$tmp/err" || fail "--revision '$bad': exit $rc, $(cat "$tmp/err")"
done
set +e
"$ridge" run -hf 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "-hf without a value: exit $rc"
echo "pull: OK"
