#!/usr/bin/env bash
# `hearsay calibrate` against a real `hearsay node` whose simulated engine runs the `consumer` cost
# model in real time (t0 = 30 ms, a = 0.25 ms per token): the printed preset must recover a and
# the decode step (t0 + d1 + d2 x context, about 30 ms) within 20%.
# Usage: cli_calibrate_test.sh HEARSAY_BINARY SCRATCH_DIR
set -eu
hearsay="$1"
dir="$2.$$"
mkdir -p "$dir"
"$hearsay" node --insecure --http 127.0.0.1:0 --gossip 127.0.0.1:0 --engine-preset consumer \
  >"$dir/node.log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null; wait $node 2>/dev/null; rm -rf "$dir"' EXIT
# Wait (bounded) for the node to say where it listens.
for _ in $(seq 1 200); do
  addr=$(grep -o 'listening http=[0-9.:]*' "$dir/node.log" | head -1 | cut -d= -f2) || true
  [ -n "$addr" ] && break
  kill -0 $node || { cat "$dir/node.log"; exit 1; }
  read -rt 0.05 <> <(:) || true
done
[ -n "$addr" ] || { echo "the node never listened"; cat "$dir/node.log"; exit 1; }
out=$("$hearsay" calibrate --upstream "http://$addr" --prompt-words 32,256 --repeats 2 \
  --decode-requests 1 --decode-tokens 8 --budget 20)
echo "$out"
preset=$(echo "$out" | sed -n 's/^preset: //p')
a=$(echo "$preset" | tr ',' '\n' | sed -n 's/^a=//p')
t0=$(echo "$preset" | tr ',' '\n' | sed -n 's/^t0=//p')
d1=$(echo "$preset" | tr ',' '\n' | sed -n 's/^d1=//p')
awk -v a="$a" -v t0="$t0" -v d1="$d1" 'BEGIN {
  if (a < 0.2 || a > 0.3) { print "a = " a ", not 0.25 +- 20%"; exit 1 }
  if (t0 + d1 < 24 || t0 + d1 > 36) { print "t0 + d1 = " t0 + d1 ", not 30 +- 20%"; exit 1 }
}'
echo ok
