#!/usr/bin/env bash
# Installs every package hearsay needs to build, test, benchmark and fuzz, from Debian 12.
# Idempotent: it returns at once when everything is present. Run as root.
# Why each package is here: docs/dependencies.md.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-14 libclang-rt-14-dev clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev libsodium-dev libmimalloc-dev prometheus-cpp-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libboost-dev libssl-dev
  libmsgpack-cxx-dev cppzmq-dev libzmq3-dev
  gnuplot-nox python3-yaml
  chromium
  nginx-light wrk valgrind
  ccache
  iproute2 nftables curl
)

# npm may come with the machine's Node.js (NodeSource's nodejs package bundles it and conflicts
# with Debian's npm package), so the command, not the Debian package, is what counts.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
