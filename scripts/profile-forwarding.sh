#!/usr/bin/env bash
# Instructions per request on one node's forwarding path, counted by callgrind (deterministic on a
# noisy shared machine, unlike wall-clock time): the node of scripts/bench-forwarding.sh runs under
# valgrind --tool=callgrind in front of hearsay_fixed_upstream; wrk sends requests for SECONDS_LOAD; the
# counters cover exactly the load (zeroed before, dumped after). Prints instructions per request
# (all threads, user space only; the kernel's share is not counted) and the functions with the
# largest inclusive share. wrk waits up to 60 s per response (the node runs ~50x slower under
# valgrind).
#
# Usage: scripts/profile-forwarding.sh [BUILD_DIR]
# Environment: HEARSAY (BUILD_DIR/hearsay), MODE (json | stream; json), IO_THREADS (0),
#   SECONDS_LOAD (10), CONNECTIONS (2), TOP (25), OUT (a kept callgrind file; default temporary).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build/release}
HEARSAY=${HEARSAY:-$BUILD_DIR/hearsay}
UPSTREAM_BIN=$BUILD_DIR/bench/forwarding/hearsay_fixed_upstream
MODE=${MODE:-json}
IO_THREADS=${IO_THREADS:-0}
SECONDS_LOAD=${SECONDS_LOAD:-10}
CONNECTIONS=${CONNECTIONS:-2}
TOP=${TOP:-25}

die() {
  echo "profile-forwarding: $*" >&2
  exit 1
}
for tool in wrk valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" >/dev/null || die "$tool not found (valgrind and wrk: scripts/install-deps.sh)"
done
[ -x "$HEARSAY" ] || die "$HEARSAY not built"
[ -x "$UPSTREAM_BIN" ] || die "$UPSTREAM_BIN not built"

WORK=$(mktemp -d /tmp/hearsay-profile-forwarding.XXXXXX)
OUT=${OUT:-$WORK/callgrind.out}
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to 60 s (valgrind starts slowly) for "listening http=HOST:PORT" in $1; prints PORT.
listening_port() {
  local line
  for _ in $(seq 600); do
    line=$(grep -m1 -o 'listening http=[^ ]*' "$1" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "${line##*:}"
      return 0
    fi
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  cat "$1" "$1.err" >&2 2>/dev/null || true
  die "no listening line in $1"
}

"$UPSTREAM_BIN" --listen 127.0.0.1:0 >"$WORK/upstream.out" 2>"$WORK/upstream.out.err" &
PIDS+=($!)
UP_PORT=$(listening_port "$WORK/upstream.out" "${PIDS[-1]}")

valgrind --tool=callgrind --callgrind-out-file="$OUT" "$HEARSAY" node --insecure \
  --http 127.0.0.1:0 --gossip 127.0.0.1:0 --node-id profile --engine openai \
  --upstream "http://127.0.0.1:$UP_PORT" --model fixed --io-threads "$IO_THREADS" \
  --log-level warn >"$WORK/node.out" 2>"$WORK/node.out.err" &
NODE_PID=$!
PIDS+=("$NODE_PID")
NODE_PORT=$(listening_port "$WORK/node.out" "$NODE_PID")

# Warm up (connections, pools, first allocations), then count only the measured load.
BENCH_STREAM=$([ "$MODE" = stream ] && echo 1 || echo 0) \
  wrk -t 1 -c "$CONNECTIONS" -d 2s --timeout 60s -s bench/forwarding/completions.lua \
  "http://127.0.0.1:$NODE_PORT/v1/completions" >/dev/null
callgrind_control -z "$NODE_PID" >/dev/null
result=$(BENCH_STREAM=$([ "$MODE" = stream ] && echo 1 || echo 0) \
  wrk -t 1 -c "$CONNECTIONS" -d "${SECONDS_LOAD}s" --timeout 60s -s bench/forwarding/completions.lua \
  "http://127.0.0.1:$NODE_PORT/v1/completions" | grep '^RESULT') || die "wrk failed"
callgrind_control -d "$NODE_PID" >/dev/null
requests=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$result")
errors=$(sed -n 's/.* errors=\([0-9]*\) non2xx=\([0-9]*\).*/\1 \2/p' <<<"$result")
[ "$errors" = "0 0" ] || die "failed requests under the profiler: $result"
[ "$requests" -gt 0 ] || die "no requests completed: $result"

# callgrind_control -d writes OUT.N (N = dump number); take the newest.
dump=$(ls -t "$OUT".* 2>/dev/null | head -1)
[ -n "$dump" ] || die "no callgrind dump"
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
echo "mode=$MODE io_threads=$IO_THREADS requests=$requests instructions=$total" \
  "per_request=$((total / requests))"
echo
echo "inclusive instructions per request, top $TOP (thread entry points and asio plumbing omitted):"
callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
  awk -v n="$requests" -v top="$TOP" '
    /^ *[0-9,]+ \([ 0-9.]+%\) / {
      ir = $1; gsub(",", "", ir)
      name = $0; sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, "", name); sub(/ \[[^]]*\]$/, "", name)
      sub(/^[^:]*:/, "", name)
      if (name ~ /^(boost::asio|std::thread|0x|start_thread|clone|\?\?\?)/) next
      if (name ~ /_Function_handler|executor_op|strand_executor|any_executor/) next
      gsub(/nlohmann::json_abi_v[0-9_]+::/, "nlohmann::", name)
      if (length(name) > 110) name = substr(name, 1, 107) "..."
      printf "%9d  %s\n", ir / n, name
      if (++shown >= top) exit
    }'
