#!/usr/bin/env bash
# README command 1: installs what is missing and builds only the `ridge` binary (the tests are
# scripts/test.sh's), measures this machine once (`ridge probe`, cached), makes a Qwen3-0.6B-shaped
# model with random weights (no download; ~0.6 GB in Q8_0, cached), generates from it, and shows
# its roofline on this machine and on an H100. With ../shared present it also generates real text
# from the TinyStories model.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh
built=$SECONDS
scripts/build.sh --target ridge
echo "== built build/ridge in $((SECONDS - built)) s =="
models=${RIDGE_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ridge/models}
mkdir -p "$models"
synthetic="$models/qwen3-0.6b-q8_0.gguf"
# A file from before the built-in vocabulary had printable filler words is made again.
if [ ! -f "$synthetic" ] || grep -qa '\[PAD300\]' "$synthetic"; then
  build/ridge synth --preset qwen3-0.6b --type q8_0 -o "$synthetic"
fi
echo "== this machine's memory bandwidth and peak arithmetic (measured once, then cached) =="
build/ridge probe
build/ridge inspect "$synthetic" | sed -n 1,9p
echo "== random weights: the words are noise; the speed and the bytes moved are real =="
build/ridge run -m "$synthetic" -p "The bandwidth wall" -n 48 --temp 0
echo "== the same model's roofline: this machine, and an H100 =="
build/ridge roofline "$synthetic" --hw local h100 --batch 1 64
stories=../shared/models/stories260K/stories260K.gguf
if [ -f "$stories" ]; then
  echo "== stories260K (real trained weights) =="
  build/ridge run -m "$stories" -p "Once upon a time" -n 96 --temp 0
fi
cat <<'TXT'
== next: a real model (any llama.cpp GGUF of a family ridge runs), for example ==
  curl -LO https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf
  build/ridge run -m Qwen3-0.6B-Q8_0.gguf -p "Explain the roofline model." -n 256
  build/ridge serve -m Qwen3-0.6B-Q8_0.gguf --port 8080
TXT
echo "== quick start done in $((SECONDS - start)) s =="
