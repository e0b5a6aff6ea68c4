#!/bin/sh
# Regenerates kld_reference.json: llama-perplexity --kl-divergence of stories260K's F16 and Q4_0
# copies (written by `ridge quantize`, deterministic) from stories260K's own log-probabilities
# (llama-perplexity --kl-divergence-base, -c 128) on story.txt. Build llama-perplexity as
# regen_perplexity_reference.sh says.
# Usage: regen_kld_reference.sh path/to/llama-perplexity path/to/ridge path/to/stories260K.gguf
set -e
llama=${1:?usage: regen_kld_reference.sh llama-perplexity ridge stories260K.gguf}
ridge=${2:?}
stories=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$llama" -m "$stories" -f "$here/story.txt" -c 128 -b 128 -t 2 --kl-divergence-base "$tmp/base.bin" > /dev/null 2>&1
{
  for type in f16 q4_0; do
    "$ridge" quantize "$stories" "$tmp/$type.gguf" "$type" > /dev/null
    "$llama" -m "$tmp/$type.gguf" --kl-divergence-base "$tmp/base.bin" --kl-divergence -c 128 -b 128 -t 2 > "$tmp/out.txt" 2>&1
    python3 - "$type" "$tmp/out.txt" <<'PY'
import json, re, sys
t = open(sys.argv[2]).read()
def num(label):
    return float(re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", t).group(1))
print(json.dumps({"type": sys.argv[1], "ppl_q": num("Mean PPL(Q)"), "ppl_base": num("Mean PPL(base)"),
                  "kld_mean": num("Mean    KLD"), "kld_median": num("Median  KLD"), "kld_99": num("99.0%   KLD"),
                  "rms_dp": num("RMS Δp"), "same_top": num("Same top p")}))
PY
  done
} | python3 -c "
import json, sys
print(json.dumps({'generator': 'llama-perplexity --kl-divergence, llama.cpp 80fb11a (the peer bundle), native build, -c 128, 2 threads',
                  'text': 'story.txt', 'base': 'stories260K', 'cases': [json.loads(l) for l in sys.stdin]}, indent=1))" > "$here/kld_reference.json"
cat "$here/kld_reference.json"
