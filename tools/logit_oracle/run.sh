#!/usr/bin/env bash
# Are the logits of this tree bit-identical to those of BASE_REV? For refactors that must not
# change a single bit (the backend seam, issue 29): every architecture's tiny preset, several
# weight types, every ISA and KV type, 1 and 2 threads, a session and a two-sequence batch.
#
#   tools/logit_oracle/run.sh BASE_REV [--quick]
#
# Builds the libraries of BASE_REV (a git worktree under $ORACLE_DIR, default /tmp/ridge-oracle)
# and of this tree (build-oracle/, Release), the oracle (oracle.cpp) against each, writes the
# synthetic models with this tree's `ridge synth`, runs both oracles and diffs their hashes.
# Exit 0: identical. --quick: the avx512 ISA (or the best one) and f16/q8_0 KV only.
# BASE_REV must have this oracle's API (engine::Session, kv::KvType, Backend&) and read Gemma 4
# (tiny-gemma4, tiny-gemma4moe): ceaa629 or later.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BASE_REV [--quick]" >&2; exit 2; }
base_rev=$1
quick=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$here/../.." && pwd)
work=${ORACLE_DIR:-/tmp/ridge-oracle}
mkdir -p "$work/models"

build_tree() {  # tree -> builds ridge and its libraries in tree/build-oracle
  cmake -S "$1" -B "$1/build-oracle" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRIDGE_TESTS=OFF -DRIDGE_CUDA=OFF \
    -DRIDGE_BENCH=OFF > "$work/cmake.log"
  nice ninja -C "$1/build-oracle" ridge > "$work/ninja.log"
}

build_oracle() {  # tree out
  local libs=()
  for l in engine backend model checkpoint kv kernels tokenizer gguf tensor base sampling spec grammar; do
    [ -f "$1/build-oracle/libridge_$l.a" ] && libs+=("$1/build-oracle/libridge_$l.a")  # older trees lack some
  done
  nice g++ -std=c++20 -O2 -DFMT_SHARED -I"$1/src" -o "$2" "$here/oracle.cpp" \
    -Wl,--start-group "${libs[@]}" -Wl,--end-group -lfmt -lpcre2-8 -lxxhash -pthread
}

base_tree="$work/base-$base_rev"
if [ ! -d "$base_tree" ]; then
  git -C "$tree" worktree add --detach "$base_tree" "$base_rev" > /dev/null
fi
echo "building $base_rev and this tree (Release, libraries and ridge)..."
build_tree "$base_tree"
build_tree "$tree"
build_oracle "$base_tree" "$work/oracle-base"
build_oracle "$tree" "$work/oracle-new"

# The models: every architecture's tiny preset at f32 and q8_0, other weight types on two of
# them, gpt-oss with mxfp4 experts, K-quants on Qwen3-0.6B's shape (2 layers; the tiny presets'
# rows are too short for them), Qwen3.5-0.8B's shape (4 layers).
ridge="$tree/build-oracle/ridge"
list="$work/models.txt"
: > "$list"
synth() {  # preset type [extra args]
  local p=$1 t=$2; shift 2
  local f="$work/models/$p$(echo "$*" | tr -d ' -')-$t.gguf"
  if [ ! -f "$f" ] && ! nice "$ridge" synth --preset "$p" --type "$t" -o "$f" -t 1 "$@" > "$work/synth.log" 2>&1; then
    echo "synth $p $t $*:" >&2; cat "$work/synth.log" >&2; exit 1
  fi
  echo "$f" >> "$list"
}
for p in tiny-llama tiny-llama3 tiny-qwen2 tiny-qwen3 tiny-qwen3-yarn tiny-qwen2moe tiny-qwen3moe \
         tiny-gpt-oss tiny-gemma2 tiny-gemma3 tiny-gemma4 tiny-gemma4moe tiny-qwen35 tiny-qwen35moe; do
  synth "$p" f32
  synth "$p" q8_0
done
for p in tiny-llama tiny-qwen3; do
  for t in f16 bf16 q4_0; do synth "$p" "$t"; done
done
synth tiny-gpt-oss mxfp4
# IQ4_XS (its own AVX-512 layout) and the grid and ternary formats, every matrix in one type.
for t in iq4_xs iq2_xxs iq3_s iq1_m tq2_0; do synth qwen3-0.6b "$t" --layers 2; done
for t in q4_k_m q6_k q5_k_m q3_k_m q2_k; do synth qwen3-0.6b "$t" --layers 2; done
synth qwen3.5-0.8b q8_0 --layers 4

args=()
if [ "$quick" = --quick ]; then
  isa=avx512
  grep -q avx512bw /proc/cpuinfo || isa=avx2
  args=(--isa "$isa" --kv f16,q8_0)
fi
echo "running both oracles over $(wc -l < "$list") models..."
nice "$work/oracle-base" "${args[@]}" "$list" > "$work/base.txt" 2> "$work/base.log"
nice "$work/oracle-new" "${args[@]}" "$list" > "$work/new.txt" 2> "$work/new.log"
if grep -q ERROR "$work/new.txt"; then
  echo "errors in this tree's run:"; grep ERROR "$work/new.txt" | head
fi
if diff "$work/base.txt" "$work/new.txt" > "$work/diff.txt"; then
  echo "identical: $(grep -c fnv1a "$work/new.txt") hashes ($work/new.txt)"
else
  echo "DIFFERENT: $(grep -c '^>' "$work/diff.txt") of $(wc -l < "$work/new.txt") lines ($work/diff.txt)"
  head -20 "$work/diff.txt"
  exit 1
fi
