#!/usr/bin/env bash
# Build the llama.cpp MTP oracle (see mtp_oracle.cpp).
#   tools/mtp_oracle/build.sh [OUTPUT]      default OUTPUT: /tmp/mtp_oracle/mtp_oracle
# LLAMA_DIR (default /tmp/llama-native) is a llama.cpp checkout whose shared libraries
# are built in $LLAMA_DIR/build/bin (cmake --build $LLAMA_DIR/build --target llama).
set -euo pipefail
LLAMA_DIR="${LLAMA_DIR:-/tmp/llama-native}"
OUT="${1:-/tmp/mtp_oracle/mtp_oracle}"
LIB="$LLAMA_DIR/build/bin"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -e "$LIB/libllama.so" ] || { echo "build.sh: $LIB/libllama.so not found (build llama.cpp first)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
# llama-ext.h (src/) declares the nextn staging API with C++ linkage.
g++ -O2 -std=c++17 \
    -I"$LLAMA_DIR/include" -I"$LLAMA_DIR/ggml/include" -I"$LLAMA_DIR/src" \
    "$HERE/mtp_oracle.cpp" -o "$OUT" \
    -L"$LIB" -lllama -lggml -lggml-base -Wl,-rpath,"$LIB"
echo "$OUT"
