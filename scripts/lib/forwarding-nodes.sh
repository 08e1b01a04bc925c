# shellcheck shell=bash
# Sourced by scripts/bench-forwarding.sh and scripts/profile-forwarding.sh: starts the
# fixed-response upstream and hearsay nodes in front of it on loopback (each on a port it picks
# itself), and stops everything it started when the script exits, also when interrupted.
#
# The sourcing script sets, before sourcing:
#   FWD_NAME         its name, for messages and the temp dir;
#   FWD_START_TENTHS how long (in 0.1 s) a process may take to print its listening line (valgrind
#                    starts slowly), also the bound on the peer path becoming ready;
#   FWD_STOP_TENTHS  how long (in 0.1 s) a process may take to exit after SIGTERM before SIGKILL;
#   FWD_HTTP_SECONDS the bound on one http_get.
# and gets:
#   die MSG...                       print "FWD_NAME: MSG" and exit 1;
#   fwd_begin                        make WORK (temp dir) and install the cleanup traps;
#   PIDS                             what cleanup stops (append to it; WRK_PID is stopped too);
#   listening_port OUT PID           wait for "listening http=HOST:PORT" in OUT, print PORT;
#   http_get PORT PATH               GET PATH from 127.0.0.1:PORT (no curl needed; over TLS with
#                                    curl when PORT is in TLS_PORTS, a space-separated list);
#   start_upstream BIN [ARGS...]     start hearsay_fixed_upstream; sets UP_PORT;
#   start_node ID PROFILED BIN [ARGS...]
#                                    start `BIN node` (insecure, engine openai, model fixed) with
#                                    ARGS, under "${FWD_PROFILER[@]}" if PROFILED is 1; sets
#                                    STARTED_PID and STARTED_PORT;
#   start_peer_path BIN POLICY IO_THREADS PROFILE(none|entry|server) SETTLE_SECONDS [ID [ARGS...]]
#                                    start the peer path (nodes ID-server and ID-entry, default
#                                    "peer", each also given ARGS with @NODE@ replaced by its id):
#                                    a serving node (policy local) before the
#                                    upstream and an entry node (policy POLICY) whose engine points
#                                    at a closed port, so once its health probes fail it forwards
#                                    every request; waits until the entry sees its peer alive, then
#                                    SETTLE_SECONDS for the failed probes; sets PEER_SERVER_PID,
#                                    PEER_ENTRY_PID and PEER_ENTRY_PORT.

# The variables set for the sourcing script look unused here.
# shellcheck disable=SC2034

die() {
  echo "$FWD_NAME: $*" >&2
  exit 1
}

fwd_begin() {
  WORK=$(mktemp -d "/tmp/hearsay-$FWD_NAME.XXXXXX")
  PIDS=()
  trap fwd_cleanup EXIT
  trap 'exit 130' INT TERM
}

fwd_cleanup() {
  local pid
  [ -n "${WRK_PID:-}" ] && PIDS+=("$WRK_PID")
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq "$FWD_STOP_TENTHS"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}

listening_port() {
  local out=$1 pid=$2 line
  for _ in $(seq "$FWD_START_TENTHS"); do
    line=$(grep -m1 -o 'listening http=[^ ]*' "$out" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "${line##*:}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$out" "$out.err" >&2 2>/dev/null || true
  die "no listening line in $out"
}

http_get() {
  local body
  if [[ " ${TLS_PORTS:-} " == *" $1 "* ]]; then
    curl -sk --max-time "$FWD_HTTP_SECONDS" "https://127.0.0.1:$1$2"
    return
  fi
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$2" >&3
  body=$(timeout "$FWD_HTTP_SECONDS" cat <&3) || true
  exec 3<&-
  printf '%s' "$body"
}

start_upstream() {
  local bin=$1
  shift
  "$bin" --listen 127.0.0.1:0 "$@" >"$WORK/upstream.out" 2>"$WORK/upstream.out.err" &
  PIDS+=($!)
  UP_PORT=$(listening_port "$WORK/upstream.out" "${PIDS[-1]}")
}

start_node() {
  local id=$1 profiled=$2 bin=$3
  shift 3
  local cmd=("$bin" node --insecure --http 127.0.0.1:0 --gossip 127.0.0.1:0 --node-id "$id"
    --engine openai --model fixed "$@")
  [ "$profiled" = 1 ] && cmd=("${FWD_PROFILER[@]}" "${cmd[@]}")
  "${cmd[@]}" >"$WORK/$id.out" 2>"$WORK/$id.out.err" &
  STARTED_PID=$!
  PIDS+=("$STARTED_PID")
  STARTED_PORT=$(listening_port "$WORK/$id.out" "$STARTED_PID")
}

# True when the peer path's entry node lists its peer alive. (The metrics are read whole first:
# `grep -q` on the pipe would close it early, and with pipefail the writer's SIGPIPE reads as a
# failure.)
entry_sees_peer() {
  local metrics
  metrics=$(http_get "$PEER_ENTRY_PORT" /metrics) || true
  grep -q '^hearsay_peers{state="alive"} 1$' <<<"$metrics"
}

start_peer_path() {
  local bin=$1 policy=$2 io_threads=$3 profile=$4 settle=$5 id=${6:-peer} gossip
  shift $(($# < 6 ? $# : 6))
  local args=("$@")
  set -- "${args[@]//@NODE@/$id-server}"
  start_node "$id-server" "$([ "$profile" = server ] && echo 1 || echo 0)" "$bin" \
    --upstream "http://127.0.0.1:$UP_PORT" --policy local --io-threads "$io_threads" \
    --log-level warn "$@"
  PEER_SERVER_PID=$STARTED_PID
  gossip=$(grep -m1 -o 'gossip=[^ ]*' "$WORK/$id-server.out")
  set -- "${args[@]//@NODE@/$id-entry}"
  # Port 1 on loopback is closed: the entry's engine fails its probes and routes everything away.
  start_node "$id-entry" "$([ "$profile" = entry ] && echo 1 || echo 0)" "$bin" \
    --upstream "http://127.0.0.1:1" --policy "$policy" --join "${gossip#gossip=}" \
    --io-threads "$io_threads" --log-level error "$@"
  PEER_ENTRY_PID=$STARTED_PID
  PEER_ENTRY_PORT=$STARTED_PORT
  [[ " ${args[*]} " == *" --tls-cert "* ]] && TLS_PORTS="${TLS_PORTS:-} $STARTED_PORT"
  for _ in $(seq "$FWD_START_TENTHS"); do
    entry_sees_peer && break
    sleep 0.1
  done
  entry_sees_peer || die "the peer path's entry node never saw its peer alive"
  sleep "$settle"  # two failed health probes of the entry's engine, 1 s apart
}
