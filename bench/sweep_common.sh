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
model_file() {
  local f="$models/$1-$2${LAYERS:+-${LAYERS}l}.gguf"
  [ -f "$f" ] || build/ridge synth --preset "$1" --type "$2" ${LAYERS:+--layers "$LAYERS"} -o "$f" >/dev/null 2>&1
  echo "$f"
}
