#!/usr/bin/env bash
# Installs everything ridge needs to build and test on Debian 12 (idempotent; apt only when
# something is missing). Run as root or with sudo available.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libxxhash-dev libboost-dev libcpp-httplib-dev
      libcurl4-openssl-dev libssl-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      clang libclang-rt-14-dev curl jq bc
      python3 python3-jinja2 python3-jsonschema python3-yaml)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
command -v node >/dev/null || echo "setup: note: Node.js 20 is needed for the llama.cpp peer and the server tests" >&2
