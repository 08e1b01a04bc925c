#!/usr/bin/env bash
# The forwarding-path benchmark (issue 5, section 8): one hearsay node's added latency and maximum
# throughput against nginx, both proxying the same fixed-response upstream on loopback, with wrk
# driving all three paths in one run:
#   base     wrk -> hearsay_fixed_upstream
#   nginx    wrk -> nginx (proxy_pass, keep-alive upstream pool) -> hearsay_fixed_upstream
#   hearsay  wrk -> hearsay node --engine openai --upstream ... --insecure -> hearsay_fixed_upstream
# The machine is shared and noisy, so the paths are interleaved (each round runs all three, in a
# rotating order) and medians over rounds are quoted. Per round and path:
#   - a latency run: 1 connection, closed loop (no queueing: the per-request time itself);
#   - a throughput run: TPUT_CONNECTIONS connections (the path's maximum requests/s), and the
#     proxy processes' CPU time per request during it (from /proc; the node and nginx each run
#     one thread, so this bounds their throughput, and it moves less than requests/s when the
#     machine's other load takes cores away).
# Added latency = the path's percentile minus the base's, in the same round; medians over rounds.
# Prints a Markdown table (the one in docs/benchmarks.md) and writes raw results to RESULTS_FILE.
#
# The peer path (PEER=1, the default) is a fourth: wrk -> entry node -> peer node -> upstream. The
# entry node's own engine points at a closed port, so once its health probes fail it is unhealthy
# and routes every request to the one peer (policy POLICY), which serves it (policy local); the
# script checks on the entry's /metrics that every request was forwarded. Its added latency is
# two hops' worth: compare it with the one-node path, not with nginx.
#
# Several node builds or settings can run side by side in the same rounds (a before/after
# comparison): VARIANTS is a space-separated list of NAME:BINARY:IO_THREADS, each started as its own
# node and measured as its own path (default: one, "hearsay:BUILD_DIR/hearsay:IO_THREADS").
#
# With TLS=1 each path through nodes runs a second time over TLS, side by side in the same rounds:
# NAME-tls is the node with --tls-cert (wrk speaks HTTPS to it; the upstream leg stays plain),
# and peer-tls the peer path with both nodes on TLS and the forward over mutual TLS (--tls-ca),
# certificates from `hearsay ca`. A line per pair gives what TLS adds.
#
# Usage: scripts/bench-forwarding.sh [BUILD_DIR]    (make bench-forwarding builds and runs it)
# Environment: ROUNDS (5), LAT_SECONDS (3), TPUT_SECONDS (4), TPUT_CONNECTIONS (32),
#   WRK_THREADS (1), MODES ("json stream"), POLICY (hearsay), NGINX_WORKERS (1), IO_THREADS (0),
#   UPSTREAM_THREADS (1), PEER (1), PEER_BIN (BUILD_DIR/hearsay), VARIANTS (above), RESULTS_FILE (BUILD_DIR/bench-forwarding.tsv), ROUTE_BENCH
#   (BUILD_DIR/bench/hearsay_bench: the route micro-benchmark for the decision-time share).
# Everything it starts is stopped on exit, also when interrupted.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${1:-${BUILD_DIR:-build/release}}
ROUNDS=${ROUNDS:-5}
LAT_SECONDS=${LAT_SECONDS:-3}
TPUT_SECONDS=${TPUT_SECONDS:-4}
TPUT_CONNECTIONS=${TPUT_CONNECTIONS:-32}
WRK_THREADS=${WRK_THREADS:-1}
MODES=${MODES:-json stream}
POLICY=${POLICY:-hearsay}
NGINX_WORKERS=${NGINX_WORKERS:-1}
IO_THREADS=${IO_THREADS:-0}
UPSTREAM_THREADS=${UPSTREAM_THREADS:-1}
RESULTS_FILE=${RESULTS_FILE:-$BUILD_DIR/bench-forwarding.tsv}
PEER=${PEER:-1}
TLS=${TLS:-0}
PEER_BIN=${PEER_BIN:-$BUILD_DIR/hearsay}

VARIANTS=${VARIANTS:-hearsay:$BUILD_DIR/hearsay:$IO_THREADS}
UPSTREAM_BIN=$BUILD_DIR/bench/forwarding/hearsay_fixed_upstream
ROUTE_BENCH=${ROUTE_BENCH:-$BUILD_DIR/bench/hearsay_bench}
LUA=bench/forwarding/completions.lua

FWD_NAME="bench-forwarding"
FWD_START_TENTHS=100
FWD_STOP_TENTHS=50
FWD_HTTP_SECONDS=5
# shellcheck source=scripts/lib/forwarding-nodes.sh
. scripts/lib/forwarding-nodes.sh
for tool in wrk nginx; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null ||
    die "$tool not found; run scripts/install-deps.sh"
done
NGINX=$(PATH=$PATH:/usr/sbin command -v nginx)
for v in $VARIANTS; do
  IFS=: read -r name bin threads <<<"$v"
  [[ $name =~ ^[a-z][a-z0-9_-]*$ && $name != base && $name != nginx ]] ||
    die "VARIANTS: bad name '$name' in '$v' (lowercase; not base or nginx)"
  [[ $threads =~ ^[0-9]+$ ]] || die "VARIANTS: bad I/O thread count in '$v'"
  [ -x "$bin" ] || die "$bin not built (make bench-forwarding builds it)"
done
[ "$PEER" = 0 ] || [ -x "$PEER_BIN" ] || die "$PEER_BIN not built (make bench-forwarding builds it)"
[ -x "$UPSTREAM_BIN" ] || die "$UPSTREAM_BIN not built (make bench-forwarding builds it)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"

fwd_begin

# Waits up to 10 s until something accepts connections on 127.0.0.1:$1.
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# --- start the servers -------------------------------------------------------------------------
start_upstream "$UPSTREAM_BIN" --threads "$UPSTREAM_THREADS"

declare -A URL_BASE=([base]="http://127.0.0.1:$UP_PORT")
# The processes whose CPU time a path's throughput run is charged (the proxy's; none for base).
declare -A PROXY_PIDS=([base]="")
NODES=()
for v in $VARIANTS; do
  IFS=: read -r name bin threads <<<"$v"
  start_node "bench-$name" 0 "$bin" --upstream "http://127.0.0.1:$UP_PORT" --policy "$POLICY" \
    --io-threads "$threads" --log-level warn
  URL_BASE[$name]="http://127.0.0.1:$STARTED_PORT"
  PROXY_PIDS[$name]=$STARTED_PID
  NODES+=("$name")
done

if [ "$TLS" = 1 ]; then
  PKI=$WORK/pki
  "$PEER_BIN" ca init --dir "$PKI" >/dev/null
  for id in bench-tls peer-tls-server peer-tls-entry; do
    "$PEER_BIN" ca issue --dir "$PKI" --node-id "$id" --ip 127.0.0.1 >/dev/null
  done
  for v in $VARIANTS; do
    IFS=: read -r name bin threads <<<"$v"
    start_node "bench-$name-tls" 0 "$bin" --upstream "http://127.0.0.1:$UP_PORT" \
      --policy "$POLICY" --io-threads "$threads" --log-level warn \
      --tls-cert "$PKI/bench-tls.crt" --tls-key "$PKI/bench-tls.key"
    URL_BASE[$name-tls]="https://127.0.0.1:$STARTED_PORT"
    PROXY_PIDS[$name-tls]=$STARTED_PID
    NODES+=("$name-tls")
  done
fi

# The entry node's client requests by route decision $2 (local, forwarded, retried).
decisions() {
  http_get "$1" /metrics | awk -v d="$2" '$1 == "hearsay_requests_total{decision=\"" d "\"}" { print $2 }'
}

if [ "$PEER" != 0 ]; then
  start_peer_path "$PEER_BIN" "$POLICY" "$IO_THREADS" none 3
  URL_BASE[peer]="http://127.0.0.1:$PEER_ENTRY_PORT"
  PROXY_PIDS[peer]="$PEER_ENTRY_PID $PEER_SERVER_PID"
  NODES+=(peer)
  if [ "$TLS" = 1 ]; then
    plain_entry=$PEER_ENTRY_PORT
    start_peer_path "$PEER_BIN" "$POLICY" "$IO_THREADS" none 3 peer-tls \
      --tls-cert "$PKI/@NODE@.crt" --tls-key "$PKI/@NODE@.key" --tls-ca "$PKI/ca.crt"
    URL_BASE[peer-tls]="https://127.0.0.1:$PEER_ENTRY_PORT"
    PROXY_PIDS[peer-tls]="$PEER_ENTRY_PID $PEER_SERVER_PID"
    NODES+=(peer-tls)
    PEER_TLS_ENTRY_PORT=$PEER_ENTRY_PORT
    PEER_ENTRY_PORT=$plain_entry
  fi
fi

# nginx cannot report an ephemeral port, so pick a random free-looking one; retry on a clash.
NG_PORT=
for _ in $(seq 10); do
  port=$((20000 + RANDOM % 40000))
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
  mkdir -p "$WORK/nginx"
  sed -e "s|@WORKERS@|$NGINX_WORKERS|; s|@WORK_DIR@|$WORK/nginx|g" \
    -e "s|@UPSTREAM_PORT@|$UP_PORT|; s|@LISTEN_PORT@|$port|" \
    bench/forwarding/nginx.conf.in >"$WORK/nginx/nginx.conf"
  "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/nginx-error.log" \
    >"$WORK/nginx.out" 2>&1 &
  pid=$!
  if wait_port "$port" && kill -0 "$pid" 2>/dev/null; then
    PIDS+=("$pid")
    NG_PORT=$port
    break
  fi
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
[ -n "$NG_PORT" ] || { cat "$WORK/nginx/nginx-error.log" >&2 || true; die "nginx did not start"; }

URL_BASE[nginx]="http://127.0.0.1:$NG_PORT"
PROXY_PIDS[nginx]="${PIDS[-1]} $(pgrep -P "${PIDS[-1]}" | tr '\n' ' ')"  # master and workers
PATHS=(base nginx "${NODES[@]}")
echo "bench-forwarding: upstream :$UP_PORT, nginx :$NG_PORT ($NGINX_WORKERS worker(s)), nodes" \
  "$VARIANTS (NAME:BINARY:IO_THREADS; 0 = I/O on the core thread), policy $POLICY;" \
  "$ROUNDS rounds" >&2

# One wrk run; sets RUN to "rps p50 p90 p99" (µs), or dies on any failed or wrong response. wrk
# runs in the background and is waited for, so a signal interrupts the run at once (bash defers
# traps while a foreground child runs); cleanup stops it.
WRK_PID=
run_wrk() {
  local path=$1 mode=$2 connections=$3 seconds=$4 check=${5:-0} out result errors non2xx bad
  BENCH_STREAM=$([ "$mode" = stream ] && echo 1 || echo 0) BENCH_CHECK=$check \
    wrk -t "$WRK_THREADS" -c "$connections" -d "${seconds}s" --latency -s "$LUA" \
    "${URL_BASE[$path]}/v1/completions" >"$WORK/wrk.out" 2>&1 &
  WRK_PID=$!
  wait "$WRK_PID" || die "wrk failed on $path: $(cat "$WORK/wrk.out")"
  WRK_PID=
  out=$(cat "$WORK/wrk.out")
  result=$(grep '^RESULT' <<<"$out") || die "no RESULT from wrk on $path: $out"
  errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$result")
  non2xx=$(sed -n 's/.* non2xx=\([0-9]*\).*/\1/p' <<<"$result")
  bad=$(sed -n 's/.* bad=\([0-9]*\).*/\1/p' <<<"$result")
  if [ "$errors" != 0 ] || [ "$non2xx" != 0 ] || [ "$bad" != 0 ]; then
    die "$path/$mode: errors=$errors non2xx=$non2xx bad=$bad: $(grep FIRST_BAD <<<"$out" || true)"
  fi
  RUN=$(sed -n 's/.* rps=\([0-9.]*\) p50_us=\([0-9]*\) p90_us=\([0-9]*\) p99_us=\([0-9]*\).*/\1 \2 \3 \4/p' \
    <<<"$result")
}

# --- sanity: every path answers every request with the full canned text ---------------------
for mode in $MODES; do
  for path in "${PATHS[@]}"; do run_wrk "$path" "$mode" 2 1 1; done
done

if [ "$PEER" != 0 ]; then
  for port in "$PEER_ENTRY_PORT" ${PEER_TLS_ENTRY_PORT:-}; do
    local_n=$(decisions "$port" local)
    fwd_n=$(decisions "$port" forwarded)
    [ "${local_n:-x}" = 0 ] && [ "${fwd_n:-0}" -gt 0 ] ||
      die "the peer path on :$port did not forward every request (local=$local_n forwarded=$fwd_n)"
  done
fi

# --- the measured, interleaved rounds ----------------------------------------------------------
# CPU time (user + system, clock ticks) the processes $* have used so far, all threads.
cpu_ticks() {
  local t=0 pid
  for pid in "$@"; do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
  done
  echo "$t"
}
TICKS_PER_S=$(getconf CLK_TCK)

printf 'round\tmode\tpath\tkind\trps\tp50_us\tp90_us\tp99_us\tcpu_us_per_req\n' >"$RESULTS_FILE"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    # Rotate the order each round so no path always runs first (or after a particular one).
    for i in "${!PATHS[@]}"; do
      path=${PATHS[$(((i + round) % ${#PATHS[@]}))]}
      run_wrk "$path" "$mode" 1 "$LAT_SECONDS"
      read -r rps p50 p90 p99 <<<"$RUN"
      printf '%s\t%s\t%s\tlatency\t%s\t%s\t%s\t%s\tnan\n' "$round" "$mode" "$path" "$rps" \
        "$p50" "$p90" "$p99" >>"$RESULTS_FILE"
      # shellcheck disable=SC2086 # a list of pids
      before=$(cpu_ticks ${PROXY_PIDS[$path]})
      run_wrk "$path" "$mode" "$TPUT_CONNECTIONS" "$TPUT_SECONDS"
      # shellcheck disable=SC2086
      after=$(cpu_ticks ${PROXY_PIDS[$path]})
      read -r rps p50 p90 p99 <<<"$RUN"
      # The proxy's CPU time per request: what bounds a single-threaded proxy's throughput, and
      # steadier than requests/s on a shared machine (it does not count time spent waiting for a
      # core).
      cpu=$(awk -v t=$((after - before)) -v hz="$TICKS_PER_S" -v r="$rps" -v s="$TPUT_SECONDS" \
        -v p="${PROXY_PIDS[$path]}" 'BEGIN { if (p == "" || r <= 0) print "nan";
          else printf "%.1f", t / hz * 1e6 / (r * s) }')
      printf '%s\t%s\t%s\tthroughput\t%s\t%s\t%s\t%s\t%s\n' "$round" "$mode" "$path" "$rps" \
        "$p50" "$p90" "$p99" "$cpu" >>"$RESULTS_FILE"
    done
  done
  echo "bench-forwarding: round $round/$ROUNDS done" >&2
done

# --- summary -----------------------------------------------------------------------------------
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan";
  else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# Values of column $4 for (mode $1, path $2, kind $3), one per round.
col() {
  awk -F'\t' -v m="$1" -v p="$2" -v k="$3" -v c="$4" \
    'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
     $2 == m && $3 == p && $4 == k { print $ix[c] }' "$RESULTS_FILE"
}
# Per-round difference path - base of column $3 (latency runs), one per round.
added() {
  awk -F'\t' -v m="$1" -v p="$2" -v c="$3" \
    'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
     $2 == m && $4 == "latency" && $3 == "base" { b[$1] = $ix[c] }
     $2 == m && $4 == "latency" && $3 == p { v[$1] = $ix[c] }
     END { for (r in v) if (r in b) print v[r] - b[r] }' "$RESULTS_FILE"
}
# n/a when the reference is not positive (a negative added p99 is noise, not a speed-up).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "n/a"; else printf "%.2f", a / b }'; }

echo
echo "| mode | path | p50 µs | p99 µs | added p50 µs | added p99 µs | max req/s ($TPUT_CONNECTIONS conn) | proxy CPU µs/req |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for mode in $MODES; do
  for path in "${PATHS[@]}"; do
    p50=$(col "$mode" "$path" latency p50_us | median)
    p99=$(col "$mode" "$path" latency p99_us | median)
    rps=$(col "$mode" "$path" throughput rps | median)
    cpu=$(col "$mode" "$path" throughput cpu_us_per_req | awk '$1 != "nan"' | median)
    [ "$path" = base ] && cpu="—"
    if [ "$path" = base ]; then a50="—"; a99="—"; else
      a50=$(added "$mode" "$path" p50_us | median)
      a99=$(added "$mode" "$path" p99_us | median)
    fi
    printf '| %s | %s | %s | %s | %s | %s | %.0f | %s |\n' "$mode" "$path" "$p50" "$p99" "$a50" \
      "$a99" "$rps" "$cpu"
  done
done
echo
for mode in $MODES; do
  n50=$(added "$mode" nginx p50_us | median)
  n99=$(added "$mode" nginx p99_us | median)
  nr=$(col "$mode" nginx throughput rps | median)
  nc=$(col "$mode" nginx throughput cpu_us_per_req | awk '$1 != "nan"' | median)
  for node in "${NODES[@]}"; do
    hc=$(col "$mode" "$node" throughput cpu_us_per_req | awk '$1 != "nan"' | median)
    h50=$(added "$mode" "$node" p50_us | median)
    h99=$(added "$mode" "$node" p99_us | median)
    hr=$(col "$mode" "$node" throughput rps | median)
    r50=$(ratio "$h50" "$n50")
    r99=$(ratio "$h99" "$n99")
    rr=$(ratio "$hr" "$nr")
    if [[ $node == peer* ]]; then
      # Two nodes in the path: not what the goal compares with nginx's one proxy.
      echo "- $mode: peer path (entry node -> peer node) / nginx added latency p50 $r50×, p99" \
        "$r99×; throughput $rr× (two hops; for comparison with the one-node path)"
      continue
    fi
    v50=$(awk -v r="$r50" 'BEGIN { print (r != "n/a" && r <= 1.2) ? "met" : "NOT met" }')
    vr=$(awk -v r="$rr" 'BEGIN { print (r != "n/a" && r >= 0.8) ? "met" : "NOT met" }')
    echo "- $mode: $node/nginx added latency p50 $r50× (goal ≤ 1.2×: $v50), p99 $r99×;" \
      "throughput $rr× (goal ≥ 0.8×: $vr); proxy CPU per request $hc vs $nc µs" \
      "(nginx's / the node's: $(ratio "$nc" "$hc")×)"
  done
done

# What TLS adds: each NAME-tls path against NAME, medians of the per-round added latencies.
if [ "$TLS" = 1 ]; then
  for mode in $MODES; do
    for node in "${NODES[@]}"; do
      [[ $node == *-tls ]] || continue
      plain=${node%-tls}
      echo "- $mode: TLS cost, $node vs $plain: added p50 $(added "$mode" "$node" p50_us | median)" \
        "vs $(added "$mode" "$plain" p50_us | median) µs, p99 $(added "$mode" "$node" p99_us | median)" \
        "vs $(added "$mode" "$plain" p99_us | median) µs; max req/s" \
        "$(col "$mode" "$node" throughput rps | median) vs $(col "$mode" "$plain" throughput rps | median);" \
        "proxy CPU µs/req $(col "$mode" "$node" throughput cpu_us_per_req | awk '$1 != "nan"' | median)" \
        "vs $(col "$mode" "$plain" throughput cpu_us_per_req | awk '$1 != "nan"' | median)"
    done
  done
fi

# The routing decision's share of one request: Policy::Choose from the route micro-benchmark
# (8 candidates and an 8192-token prompt, both more than this single-node run decides over, so an
# upper bound) against hearsay's median per-request time.
if [ -x "$ROUTE_BENCH" ]; then
  ns=$("$ROUTE_BENCH" --benchmark_filter='^BM_RouteDecision/hearsay/8$' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=csv \
    2>/dev/null | awk -F, '$1 ~ /_median"?$/ { t = $4; u = $5; gsub(/"/, "", u);
      print (u == "us" ? t * 1000 : (u == "ms" ? t * 1e6 : t)) }')
  for mode in $MODES; do
    for node in "${NODES[@]}"; do
      h=$(col "$mode" "$node" latency p50_us | median)
      [ -n "$ns" ] && awk -v ns="$ns" -v h="$h" -v m="$mode" -v n="$node" 'BEGIN {
        printf "- routing decision (BM_RouteDecision/hearsay/8, median CPU time): %.0f ns = %.3f%% of %s'"'"'s p50 per-request time (%s µs, %s)\n",
          ns, 100 * ns / 1000 / h, n, h, m }'
    done
  done
else
  echo "- routing decision share: skipped ($ROUTE_BENCH not built)"
fi
if [ "$PEER" != 0 ]; then
  echo "- peer path: the entry node routed $(decisions "$PEER_ENTRY_PORT" forwarded) requests to" \
    "its peer, $(decisions "$PEER_ENTRY_PORT" local) locally, $(decisions "$PEER_ENTRY_PORT" retried) retried"
fi
echo
echo "raw results: $RESULTS_FILE" >&2
