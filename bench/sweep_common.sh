# Shared by the sweeps over synthetic Qwen3-shaped models (compare_peer.sh, thread_scaling.sh);
# sourced from the repository root. Arguments: [PRESETS] [TYPES] [THREADS] (comma-separated).
presets=${1:-qwen3-0.6b}
types=${2:-f16,q8_0,q6_k,q4_k_m,q4_0}
threads=${3:-2}
repeats=${REPEATS:-3}
models=${RIDGE_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ridge/models}
mkdir -p "$models"

# The median of the numbers on stdin (space-separated; the mean of the middle two when even).
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# The file of PRESET in TYPE, written by `ridge synth` the first time; LAYERS=N keeps the first N
# layers only (a shape too large for the machine's memory or disk, e.g. MoE presets).
# Types ridge reads but does not write (the grid formats IQ1-IQ3, TQ1_0, TQ2_0) come from
# llama-quantize in LLAMA_BIN (a native llama.cpp, ../shared/peer/README.md) applied to the f16
# file, with an importance matrix llama-imatrix computes once per shape on a fixed random text.
model_file() {
  local f="$models/$1-$2${LAYERS:+-${LAYERS}l}.gguf"
  [ -f "$f" ] || build/ridge synth --preset "$1" --type "$2" ${LAYERS:+--layers "$LAYERS"} -o "$f" >/dev/null 2>&1 ||
    llama_quantized "$1" "$2" "$f"
  echo "$f"
}

llama_quantized() {
  local bin=${LLAMA_BIN:-/tmp/llama-native/build/bin} f16 imatrix text
  [ -x "$bin/llama-quantize" ] || { echo "no llama-quantize in $bin for $2" >&2; return 1; }
  f16=$(model_file "$1" f16)
  imatrix="${f16%.gguf}-imatrix.gguf"
  if [ ! -f "$imatrix" ]; then
    text=$(mktemp)
    python3 -c "import random; random.seed(1); w='the cat sat on a mat and dog ran far away from home it was late'.split(); print(' '.join(random.choice(w) for _ in range(3000)))" > "$text"
    LD_LIBRARY_PATH="$bin" "$bin/llama-imatrix" -m "$f16" -f "$text" -o "$imatrix" -c 128 --chunks 4 -t "$threads" >/dev/null 2>&1
    rm -f "$text"
  fi
  LD_LIBRARY_PATH="$bin" "$bin/llama-quantize" --imatrix "$imatrix" "$f16" "$3" "${2^^}" "$threads" >/dev/null 2>&1
}
