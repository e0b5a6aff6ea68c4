#!/bin/sh
# Regenerates peer_gpt4o.json: llama.cpp's ids (through the peer, ../shared/peer) for the o200k
# pre-tokenizer ("gpt-4o", gpt-oss) on ../shared/vocab/ggml-vocab-qwen2.gguf retyped to
# tokenizer.ggml.pre = "gpt-4o", and on an extended copy (gpt-oss's harmony tokens, merges that
# probe word boundaries). Both vocabularies come from test_tokenizer itself
# (Gpt4oPeer.DumpForPeer, ridge's GGUF writer) and live only in a temporary folder; the texts are
# in regen_peer_gpt4o.mjs.
# Usage: [SHARED=../shared] regen_peer_gpt4o.sh path/to/test_tokenizer
#   (install the peer first: ../shared/peer/install.sh; LLAMACPP_PEER_DIR if not the default)
set -e
test_bin=${1:?usage: regen_peer_gpt4o.sh path/to/test_tokenizer}
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../../../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RIDGE_TOKENIZER_DUMP_DIR="$tmp" "$test_bin" --gtest_filter=Gpt4oPeer.DumpForPeer > "$tmp/dump.log" ||
  { cat "$tmp/dump.log"; exit 1; }
for f in qwen2_gpt4o.gguf qwen2_gpt4o_ext.gguf; do
  test -s "$tmp/$f" || { cat "$tmp/dump.log"; echo "regen_peer_gpt4o.sh: $f was not written" >&2; exit 1; }
done
node "$here/regen_peer_gpt4o.mjs" "$tmp" "$shared" "$here/peer_gpt4o.json"
