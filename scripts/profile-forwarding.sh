#!/usr/bin/env bash
# Instructions per request on one node's forwarding path, counted by callgrind (deterministic on a
# noisy shared machine, unlike wall-clock time): the node of scripts/bench-forwarding.sh runs under
# valgrind --tool=callgrind in front of hearsay_fixed_upstream; wrk sends requests for SECONDS_LOAD; the
# counters cover exactly the load (zeroed before, dumped after). Prints instructions per request
# (all threads, user space only; the kernel's share is not counted) and the functions with the
# largest inclusive share. wrk waits up to 60 s per response (the node runs ~50x slower under
# valgrind).
#
#
# PATH_KIND picks the path and the node measured:
#   node         wrk -> node -> upstream (the default; the node of the one-node path);
#   peer-entry   wrk -> entry node -> peer node -> upstream, measuring the entry node (its engine
#                points at a closed port, so it forwards every request; checked on its /metrics);
#   peer-server  the same path, measuring the peer node that serves the forwarded requests.
#
# Usage: scripts/profile-forwarding.sh [BUILD_DIR]
# Environment: HEARSAY (BUILD_DIR/hearsay), MODE (json | stream; json), IO_THREADS (0),
#   PATH_KIND (node), SECONDS_LOAD (10), CONNECTIONS (2), TOP (25), OUT (a kept callgrind file;
#   default temporary).
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
PATH_KIND=${PATH_KIND:-node}

FWD_NAME="profile-forwarding"
FWD_START_TENTHS=600  # valgrind starts slowly
FWD_STOP_TENTHS=100
FWD_HTTP_SECONDS=60
# shellcheck source=scripts/lib/forwarding-nodes.sh
. scripts/lib/forwarding-nodes.sh
for tool in wrk valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" >/dev/null || die "$tool not found (valgrind and wrk: scripts/install-deps.sh)"
done
[ -x "$HEARSAY" ] || die "$HEARSAY not built"
[ -x "$UPSTREAM_BIN" ] || die "$UPSTREAM_BIN not built"
case $PATH_KIND in node | peer-entry | peer-server) ;; *) die "PATH_KIND: node, peer-entry or peer-server" ;; esac

fwd_begin
OUT=${OUT:-$WORK/callgrind.out}
FWD_PROFILER=(valgrind --tool=callgrind --callgrind-out-file="$OUT")
start_upstream "$UPSTREAM_BIN"

if [ "$PATH_KIND" = node ]; then
  start_node profile 1 "$HEARSAY" --upstream "http://127.0.0.1:$UP_PORT" \
    --io-threads "$IO_THREADS" --log-level warn
  NODE_PID=$STARTED_PID
  NODE_PORT=$STARTED_PORT
else
  start_peer_path "$HEARSAY" hearsay "$IO_THREADS" "${PATH_KIND#peer-}" 5
  NODE_PORT=$PEER_ENTRY_PORT
  NODE_PID=$([ "$PATH_KIND" = peer-entry ] && echo "$PEER_ENTRY_PID" || echo "$PEER_SERVER_PID")
fi

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
if [ "$PATH_KIND" != node ]; then
  decisions=$(http_get "$NODE_PORT" /metrics | grep '^hearsay_requests_total{decision=' | tr '\n' ' ')
  grep -q 'decision="local"} 0 ' <<<"$decisions" ||
    die "the entry node served requests itself: $decisions"
  echo "entry node: $decisions"
fi

# callgrind_control -d writes OUT.N (N = dump number); take the newest.
dump=$(ls -t "$OUT".* 2>/dev/null | head -1)
[ -n "$dump" ] || die "no callgrind dump"
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
echo "path=$PATH_KIND mode=$MODE io_threads=$IO_THREADS requests=$requests instructions=$total" \
  "per_request=$((total / requests))"
echo
echo "inclusive instructions per request, top $TOP (thread entry points and asio plumbing omitted):"
callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
  awk -v n="$requests" -v top="$TOP" '
    # Reads to the end (no early exit): an early exit would kill callgrind_annotate with SIGPIPE,
    # which pipefail turns into the script failing.
    shown >= top { next }
    /^ *[0-9,]+ \([ 0-9.]+%\) / {
      ir = $1; gsub(",", "", ir)
      name = $0; sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, "", name); sub(/ \[[^]]*\]$/, "", name)
      sub(/^[^:]*:/, "", name)
      if (name ~ /^(boost::asio|std::thread|0x|start_thread|clone|\?\?\?)/) next
      if (name ~ /_Function_handler|executor_op|strand_executor|any_executor/) next
      gsub(/nlohmann::json_abi_v[0-9_]+::/, "nlohmann::", name)
      if (length(name) > 110) name = substr(name, 1, 107) "..."
      printf "%9d  %s\n", ir / n, name
      shown++
    }'
