#!/usr/bin/env bash
# `hearsay keygen` leaves no key readable by others, and a node names what is wrong with a key
# file: the OS's reason when it cannot read it, a warning when others can.
# Usage: keygen_test.sh HEARSAY_BINARY
set -euo pipefail
bin=$1
dir=$(mktemp -d)
node_pid=
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

umask 022
"$bin" keygen > "$dir/redirected.key"
[ "$(stat -c %a "$dir/redirected.key")" = 600 ] ||
  fail "keygen > file left mode $(stat -c %a "$dir/redirected.key")"
[ "$(wc -c < "$dir/redirected.key")" -eq 45 ] || fail "a key is 44 base64 characters and a newline"

"$bin" keygen --out "$dir/out.key"
[ "$(stat -c %a "$dir/out.key")" = 600 ] || fail "--out made mode $(stat -c %a "$dir/out.key")"
if "$bin" keygen --out "$dir/out.key" 2> "$dir/err"; then fail "--out overwrote a file"; fi
grep -q "File exists" "$dir/err" || fail "no reason given: $(cat "$dir/err")"
# Piped output is left alone (nothing to chmod) and still a key.
"$bin" keygen | grep -qE '^[A-Za-z0-9+/]{43}=$' || fail "piped keygen printed no key"

# A key file that cannot be read: exit 2 with the OS's reason.
set +e
"$bin" node --cluster-key-file "$dir/none.key" --http 127.0.0.1:0 --gossip 127.0.0.1:0 \
  2> "$dir/err" > /dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "missing key file: exit $rc, want 2"
grep -q "No such file or directory" "$dir/err" || fail "no OS reason: $(cat "$dir/err")"

# A world-readable key file: the node starts and warns.
cp "$dir/out.key" "$dir/loose.key"
chmod 644 "$dir/loose.key"
"$bin" node --cluster-key-file "$dir/loose.key" --http 127.0.0.1:0 --gossip 127.0.0.1:0 \
  > "$dir/out" 2> "$dir/log" &
node_pid=$!
for _ in $(seq 1 200); do
  grep -qs "^listening" "$dir/out" && break
  kill -0 "$node_pid" 2>/dev/null || fail "node exited: $(cat "$dir/log")"
  sleep 0.05
done
grep -q "^listening" "$dir/out" || fail "node did not start: $(cat "$dir/log")"
grep -q "event=key_file_mode.*mode 0644.*chmod 600 $dir/loose.key" "$dir/log" ||
  fail "no warning about the world-readable key: $(cat "$dir/log")"
echo "ok"
