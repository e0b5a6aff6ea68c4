#!/bin/sh
# Regenerates peer_qwen35.json: llama.cpp's ids (through the peer, ../shared/peer) for the Qwen3.5
# pre-tokenizer ("qwen35") on ../shared/vocab/ggml-vocab-qwen2.gguf with only tokenizer.ggml.pre
# rewritten to "qwen35" (written by test_tokenizer's Qwen35Peer.DumpForPeer into a temporary
# folder), and for comparison on the unchanged "qwen2" file; the texts are in regen_peer_qwen35.mjs.
# Usage: [SHARED=../shared] regen_peer_qwen35.sh path/to/test_tokenizer
#   (install the peer first: ../shared/peer/install.sh; LLAMACPP_PEER_DIR if not the default)
set -e
test_bin=${1:?usage: regen_peer_qwen35.sh path/to/test_tokenizer}
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../../../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RIDGE_TOKENIZER_DUMP_DIR="$tmp" "$test_bin" --gtest_filter=Qwen35Peer.DumpForPeer > "$tmp/dump.log" ||
  { cat "$tmp/dump.log"; exit 1; }
test -s "$tmp/qwen2_qwen35.gguf" || { cat "$tmp/dump.log"; echo "regen_peer_qwen35.sh: qwen2_qwen35.gguf was not written" >&2; exit 1; }
node "$here/regen_peer_qwen35.mjs" "$tmp" "$shared" "$here/peer_qwen35.json"
