#!/bin/sh
# Regenerates stories260K_greedy_peer.json: llama.cpp's greedy continuation (300 tokens) of the
# prompt ids of "Once upon a time", through the peer harness (../shared/peer/README.md).
set -e
here=$(cd "$(dirname "$0")" && pwd)
shared=${RIDGE_SHARED_DIR:-$here/../../../../shared}
peer=${PEER:-$HOME/.cache/llamacpp-peer/llamacpp-peer.mjs}
node "$peer" greedy --model "$shared/models/stories260K/stories260K.gguf" \
  --tokens 1,403,407,261,378 -n 300 > "$here/stories260K_greedy_peer.json"
