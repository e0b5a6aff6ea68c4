#!/usr/bin/env bash
# README command 1: installs what is missing, builds ridge, makes a Qwen3-0.6B-shaped model with
# random weights (no download; ~0.6 GB in Q8_0, cached) and generates from it; then, when the
# real TinyStories model of ../shared is present, generates real text from it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
models=${RIDGE_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ridge/models}
mkdir -p "$models"
synthetic="$models/qwen3-0.6b-q8_0.gguf"
[ -f "$synthetic" ] || build/ridge synth --preset qwen3-0.6b --type q8_0 -o "$synthetic"
build/ridge inspect "$synthetic" | sed -n 1,9p
echo "== random weights: the text is noise, the speed and bytes are real =="
build/ridge run -m "$synthetic" -p "The bandwidth wall" -n 48 --temp 0
stories=../shared/models/stories260K/stories260K.gguf
if [ -f "$stories" ]; then
  echo "== stories260K (real trained weights) =="
  build/ridge run -m "$stories" -p "Once upon a time" -n 96 --temp 0
fi
