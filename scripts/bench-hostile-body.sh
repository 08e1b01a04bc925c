#!/usr/bin/env bash
# The hostile-body benchmark (issue 16): does a node's /health stay responsive while clients POST
# bodies shaped to be expensive (many keys, long escapes, wide and deep arrays, long numbers,
# random mixes) up to the body limit, and does the time per byte stay flat as bodies grow?
#
# Starts one real `hearsay node --engine sim --insecure` per configuration, runs
# hearsay_hostile_body (bench/hostile/hostile_body.cc) against it, and stops it:
#   default     the default limits and one I/O thread: most hostile bodies at the limit are over
#               the request budget and refused with 400 by the budget's pass;
#   no-budget   members and array elements allowed up to 2^24, so the parsers meet every key
#               and element (what the budget saves);
#   one-thread  no budget as above, and --io-threads 0: the parse, /health and the core share
#               one thread (the worst case for /health).
# The bodies name a model the node does not serve (MODEL), so a body within the budget is parsed
# whole and then answered 404: the POST's time is the parse's, not the engine's. Prints one
# Markdown table (the one in docs/security.md): per configuration, shape and body size, the
# answers, the POST's median time and that time per MiB, and /health's median, p99 and max
# latency with the count over 50 ms.
#
# Usage: scripts/bench-hostile-body.sh [BUILD_DIR]    (make bench-hostile builds and runs it)
# Environment: CONFIGS ("default no-budget one-thread"), SECONDS_PER_CELL (2), POSTERS (1),
#   PROBE_MS (10), SIZES (262144,1048576), SHAPES (all), BOUND_MS (50), MODEL (not-served; the
#   nodes serve hearsay-sim, which makes the engine generate too).
# Everything it starts is stopped on exit, also when interrupted.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${1:-${BUILD_DIR:-build/release}}
CONFIGS=${CONFIGS:-default no-budget one-thread}
SECONDS_PER_CELL=${SECONDS_PER_CELL:-2}
POSTERS=${POSTERS:-1}
PROBE_MS=${PROBE_MS:-10}
SIZES=${SIZES:-262144,1048576}
SHAPES=${SHAPES:-}
BOUND_MS=${BOUND_MS:-50}
MODEL=${MODEL:-not-served}
HEARSAY=$BUILD_DIR/hearsay
DRIVER=$BUILD_DIR/bench/hostile/hearsay_hostile_body

die() {
  echo "bench-hostile-body: $*" >&2
  exit 1
}
[ -x "$HEARSAY" ] || die "$HEARSAY not built (make bench-hostile builds it)"
[ -x "$DRIVER" ] || die "$DRIVER not built (make bench-hostile builds it)"

WORK=$(mktemp -d /tmp/hearsay-bench-hostile.XXXXXX)
NODE_PID=
cleanup() {
  if [ -n "$NODE_PID" ]; then
    kill -TERM "$NODE_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NODE_PID" 2>/dev/null || true
    wait "$NODE_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

no_budget=(--max-json-members 16777216 --max-json-array-items 16777216)
shape_args=()
[ -n "$SHAPES" ] && shape_args=(--shapes "$SHAPES")

echo "| node | shape | body KiB | answers | POST median ms | ms per MiB | /health n | median ms | p99 ms | max ms | > ${BOUND_MS} ms | failed |"
echo "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for config in $CONFIGS; do
  case $config in
    default) args=(--io-threads 1) ;;
    no-budget) args=(--io-threads 1 "${no_budget[@]}") ;;
    one-thread) args=(--io-threads 0 "${no_budget[@]}") ;;
    *) die "CONFIGS: unknown configuration '$config' (default, no-budget, one-thread)" ;;
  esac
  out=$WORK/$config.out
  "$HEARSAY" node --engine sim --insecure --http 127.0.0.1:0 --gossip 127.0.0.1:0 \
    --node-id "hostile-$config" --log-level warn "${args[@]}" >"$out" 2>"$out.err" &
  NODE_PID=$!
  port=
  for _ in $(seq 100); do
    line=$(grep -m1 -o 'listening http=[^ ]*' "$out" 2>/dev/null || true)
    if [ -n "$line" ]; then
      port=${line##*:}
      break
    fi
    kill -0 "$NODE_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$out" "$out.err" >&2; die "the $config node printed no listening line"; }
  "$DRIVER" --node "127.0.0.1:$port" --label "$config" --seconds "$SECONDS_PER_CELL" \
    --posters "$POSTERS" --probe-ms "$PROBE_MS" --sizes "$SIZES" --bound-ms "$BOUND_MS" \
    --model "$MODEL" "${shape_args[@]}"
  kill -TERM "$NODE_PID"
  wait "$NODE_PID" 2>/dev/null || true
  NODE_PID=
done
