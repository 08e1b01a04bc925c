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

die() {
  echo "profile-forwarding: $*" >&2
  exit 1
}
for tool in wrk valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" >/dev/null || die "$tool not found (valgrind and wrk: scripts/install-deps.sh)"
done
[ -x "$HEARSAY" ] || die "$HEARSAY not built"
[ -x "$UPSTREAM_BIN" ] || die "$UPSTREAM_BIN not built"
case $PATH_KIND in node | peer-entry | peer-server) ;; *) die "PATH_KIND: node, peer-entry or peer-server" ;; esac

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

# start_node NAME PROFILED(0|1) ARGS...: starts a node (under callgrind if PROFILED); sets
# STARTED_PID and STARTED_PORT (its HTTP port).
start_node() {
  local name=$1 profiled=$2
  shift 2
  local cmd=("$HEARSAY" node --insecure --http 127.0.0.1:0 --gossip 127.0.0.1:0 --node-id "$name"
    --engine openai --model fixed --io-threads "$IO_THREADS" "$@")
  [ "$profiled" = 1 ] && cmd=(valgrind --tool=callgrind --callgrind-out-file="$OUT" "${cmd[@]}")
  "${cmd[@]}" >"$WORK/$name.out" 2>"$WORK/$name.out.err" &
  STARTED_PID=$!
  PIDS+=("$STARTED_PID")
  STARTED_PORT=$(listening_port "$WORK/$name.out" "$STARTED_PID")
}

# GET $2 from 127.0.0.1:$1.
http_get() {
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$2" >&3
  timeout 60 cat <&3 || true
  exec 3<&-
}

if [ "$PATH_KIND" = node ]; then
  start_node profile 1 --upstream "http://127.0.0.1:$UP_PORT" --log-level warn
  NODE_PID=$STARTED_PID
  NODE_PORT=$STARTED_PORT
else
  start_node peer-server "$([ "$PATH_KIND" = peer-server ] && echo 1 || echo 0)" \
    --upstream "http://127.0.0.1:$UP_PORT" --policy local --log-level warn
  SERVER_PID=$STARTED_PID
  gossip=$(grep -m1 -o 'gossip=[^ ]*' "$WORK/peer-server.out")
  # Port 1 on loopback is closed: the entry's engine fails its probes and forwards everything.
  start_node peer-entry "$([ "$PATH_KIND" = peer-entry ] && echo 1 || echo 0)" \
    --upstream "http://127.0.0.1:1" --join "${gossip#gossip=}" --log-level error
  ENTRY_PID=$STARTED_PID
  NODE_PORT=$STARTED_PORT
  NODE_PID=$([ "$PATH_KIND" = peer-entry ] && echo "$ENTRY_PID" || echo "$SERVER_PID")
  for _ in $(seq 300); do
    http_get "$NODE_PORT" /metrics | grep -q '^hearsay_peers{state="alive"} 1' && break
    sleep 0.2
  done
  http_get "$NODE_PORT" /metrics | grep -q '^hearsay_peers{state="alive"} 1' ||
    die "the entry node never saw its peer alive"
  sleep 5  # two failed health probes, 1 s apart (slower under valgrind)
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
