#!/bin/sh
# Regenerates peer_gemma4.json: llama.cpp's ids (through the peer, ../shared/peer) for Gemma 4's
# tokenizer (tokenizer.ggml.model = "gemma4") on the two synthetic vocabularies of
# tests/tokenizer/gemma4_vocab.h. test_tokenizer itself writes them (Gemma4Peer.DumpForPeer,
# ridge's GGUF writer) to a temporary folder; the texts are in regen_peer_gemma4.mjs.
# Usage: regen_peer_gemma4.sh path/to/test_tokenizer
#   (install the peer first: ../shared/peer/install.sh; LLAMACPP_PEER_DIR if not the default)
# node-llama-cpp logs a failed load ("key not found in model: llama.context_length") per file
# before it loads the vocabulary alone; the ids are unaffected.
set -e
test_bin=${1:?usage: regen_peer_gemma4.sh path/to/test_tokenizer}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RIDGE_TOKENIZER_DUMP_DIR="$tmp" "$test_bin" --gtest_filter=Gemma4Peer.DumpForPeer > "$tmp/dump.log" ||
  { cat "$tmp/dump.log"; exit 1; }
for f in gemma4_synthetic.gguf gemma4_synthetic_nobos.gguf; do
  test -s "$tmp/$f" || { cat "$tmp/dump.log"; echo "regen_peer_gemma4.sh: $f was not written" >&2; exit 1; }
done
node "$here/regen_peer_gemma4.mjs" "$tmp" "$here/peer_gemma4.json"
