#!/usr/bin/env bash
# Installs the pinned OpenAI JavaScript client (package.json + package-lock.json in this folder)
# with `npm ci` into a cache directory OUTSIDE the source tree, keyed by the lock file's hash, and
# prints that directory. Later runs with the same lock file reuse it without touching the network.
# Usage: install-client.sh            (cache root: ${HEARSAY_CACHE:-$HOME/.cache/hearsay}/npm)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "install-client: node (Node.js >= 20) is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "install-client: npm is not installed" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "install-client: Node.js >= 20 is required, found $(node --version)" >&2
  exit 1
fi

root=${HEARSAY_CACHE:-$HOME/.cache/hearsay}/npm
hash=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)
dir=$root/openai-client-$hash
mkdir -p "$root"
# One installer at a time (ctest may run several tests at once); the others wait, then reuse.
exec 9>"$root/.lock"
flock -w 300 9 || { echo "install-client: timed out waiting for $root/.lock" >&2; exit 1; }
if [ ! -f "$dir/.installed" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  cp "$here/package.json" "$here/package-lock.json" "$dir.tmp/"
  (cd "$dir.tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
      --cache "$root/.npm-cache" >&2)
  touch "$dir.tmp/.installed"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
echo "$dir"
