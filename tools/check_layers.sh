#!/usr/bin/env bash
# Checks the include graph against the layer order of docs/ARCHITECTURE.md: a module may include
# only modules of a lower layer (or its own). Prints each violation; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/../src"
declare -A level=([base]=0 [tensor]=1 [gguf]=1 [hub]=1 [checkpoint]=1 [kernels]=2 [tokenizer]=2 [grammar]=2 [chat]=3 [model]=3 [kv]=3 [sampling]=3 [spec]=3
                  [backend]=4 [offline]=4 [engine]=5 [analysis]=6 [quality]=6 [server]=6 [cli]=7)
# Same-layer dependencies that are part of the design (model binds weights into the KV storage;
# ridge pull merges the parts of a split GGUF; a checkpoint is converted into a GGUF).
allowed=" model->kv gguf->tensor hub->gguf checkpoint->gguf checkpoint->tensor "
bad=0
for dir in */; do
  mod=${dir%/}
  [ -n "${level[$mod]:-}" ] || { echo "unknown module src/$mod (add it to tools/check_layers.sh)"; bad=1; continue; }
  while IFS=: read -r file _ inc; do
    dep=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$inc")
    [ "$dep" = "$mod" ] && continue
    [ -n "${level[$dep]:-}" ] || continue
    if [ "${level[$dep]}" -gt "${level[$mod]}" ] || { [ "${level[$dep]}" -eq "${level[$mod]}" ] && [[ "$allowed" != *" $mod->$dep "* ]]; }; then
      echo "layer violation: $file includes $dep/ (layer ${level[$dep]}) from $mod/ (layer ${level[$mod]})"
      bad=1
    fi
  done < <(grep -rHn '#include "[a-z_]*/' "$mod" || true)
done
[ $bad -eq 0 ] && echo "layers ok"
exit $bad
