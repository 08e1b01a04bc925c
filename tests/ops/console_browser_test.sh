#!/usr/bin/env bash
# The web console in a real browser: headless Chromium (Debian's `chromium`) loads GET / of a
# 3-node cluster under load (`hearsay bench`), and the test reads the DOM the page rendered:
#   - the members table lists all three nodes alive;
#   - live numbers change between two loads while requests flow;
#   - a node killed with SIGKILL turns `dead` in the console within the detection bound
#     (node_failure_test.cc derives it: for 3 nodes, within 20 s).
# It keeps a screenshot of the console (the dead node showing) at ARTIFACT_DIR/console.png.
# Usage: console_browser_test.sh HEARSAY_BINARY ARTIFACT_DIR
# Exit 77 (ctest: skipped) when chromium is not installed: scripts/install-deps.sh installs it.
set -euo pipefail
bin=$1
artifacts=$2
detection_bound_s=20
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium is not installed (run scripts/install-deps.sh)" >&2
  exit 77
fi
mkdir -p "$artifacts"
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Chromium, headless, with its own profile; the page's timers run on virtual time, and Chromium
# waits for the page's fetches, so the DOM it prints is the one after a few polls.
browse() {
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$dir/profile" --window-size=1500,1500 --virtual-time-budget=3500 "$@" \
    2>> "$dir/chromium.log"
}

"$bin" keygen --out "$dir/cluster.key"
start_node() {  # name [--join addr]
  local name=$1; shift
  "$bin" node --cluster-key-file "$dir/cluster.key" --node-id "$name" --http 127.0.0.1:0 \
    --gossip 127.0.0.1:0 --log-level warn "$@" > "$dir/$name.out" 2> "$dir/$name.log" &
  pids+=($!)
  for _ in $(seq 1 400); do
    grep -qs "^listening" "$dir/$name.out" && break
    sleep 0.05
  done
  grep -qs "^listening" "$dir/$name.out" || fail "$name did not start: $(cat "$dir/$name.log")"
}
field() { sed -n "s/^listening.* $2=\([^ ]*\).*/\1/p" "$dir/$1.out"; }
start_node alpha
seed=$(field alpha gossip)
start_node bravo --join "$seed"
start_node charlie --join "$seed"
victim_pid=${pids[2]}
a_http=$(field alpha http)
b_http=$(field bravo http)
c_http=$(field charlie http)

# Formed: alpha lists three alive members.
for _ in $(seq 1 200); do
  [ "$("$bin" status --json --node "http://$a_http" | grep -c '"state": "alive"')" -eq 3 ] && break
  sleep 0.05
done
[ "$("$bin" status --json --node "http://$a_http" | grep -c '"state": "alive"')" -eq 3 ] ||
  fail "the cluster did not form"

# Load on every node while the browser watches.
"$bin" bench --target "http://$a_http,http://$b_http,http://$c_http" --workload mmlu --rate 15 \
  --duration 120 > "$dir/bench.out" 2> "$dir/bench.err" &
bench_pid=$!
pids+=($bench_pid)

url="http://$a_http/"
first=$(browse --dump-dom "$url")
echo "$first" | grep -q 'data-polls="' || fail "the console never rendered /status: $first"
for n in alpha bravo charlie; do
  echo "$first" | grep -q "data-node=\"$n\" data-state=\"alive\"" ||
    fail "member $n is not listed alive: $(echo "$first" | grep -o '<tr data-node="[^"]*" data-state="[^"]*"' | tr '\n' ' ')"
done
# A number that must move under load: this node's client requests since start.
client_total() { echo "$1" | sed -n 's/.*id="t-client">\([0-9,]*\)<.*/\1/p' | tr -d ,; }
before=$(client_total "$first")
[ -n "$before" ] || fail "no client-request total in the page"
second=""
for _ in $(seq 1 10); do
  second=$(browse --dump-dom "$url")
  after=$(client_total "$second")
  [ -n "$after" ] && [ "$after" -gt "$before" ] && break
done
[ -n "$after" ] && [ "$after" -gt "$before" ] ||
  fail "client requests did not change under load ($before -> $after)"
echo "live: client requests $before -> $after"
# The decisions table lists decisions made since the first load began watching, with their reason.
echo "$second" | grep -q '<td class="text">\(lowest-cost\|near-tie\)</td>' ||
  fail "no routing decision listed: $(echo "$second" | grep -o '<table id="decisions".*' | head -c 2000)"

# Kill charlie; the console must show it dead within the bound.
kill -9 "$victim_pid"
wait "$victim_pid" 2>/dev/null || true
killed_at=$(date +%s.%N)
dead=""
while :; do
  page=$(browse --dump-dom "$url")
  if echo "$page" | grep -q 'data-node="charlie" data-state="dead"'; then
    dead=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $killed_at }")
    break
  fi
  awk "BEGIN { exit !($(date +%s.%N) - $killed_at > $detection_bound_s) }" && break
done
[ -n "$dead" ] || fail "charlie not shown dead within $detection_bound_s s"
echo "dead: the console showed charlie dead ${dead} s after SIGKILL (bound ${detection_bound_s} s)"

browse --screenshot="$artifacts/console.png" "$url" > /dev/null
[ -s "$artifacts/console.png" ] || fail "no screenshot"
echo "screenshot: $artifacts/console.png"
kill "$bench_pid" 2>/dev/null || true
echo ok
