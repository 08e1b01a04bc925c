#!/usr/bin/env bash
# `hearsay apikey create` (net/api_keys.h): the key is printed once, the file holds only its hash,
# and a second key of the tenant with other limits is refused (exit 2) with nothing written.
# Usage: cli_apikey_test.sh HEARSAY_BINARY SCRATCH_FILE
set -eu
hearsay="$1"
f="$2.$$"
rm -f "$f"
trap 'rm -f "$f"' EXIT
key=$("$hearsay" apikey create --tenant acme --file "$f" --rps 5 2>/dev/null)
[[ "$key" =~ ^hsk_[0-9a-f]{12}_[0-9a-f]{64}$ ]] || { echo "bad key: $key"; exit 1; }
grep -q "^${key:4:12} blake2b256:[0-9a-f]\{64\} acme rps=5$" "$f" || { cat "$f"; exit 1; }
if grep -q "${key:17}" "$f"; then echo "the key is in the file"; exit 1; fi
"$hearsay" apikey create --tenant acme --file "$f" --rps 5 >/dev/null 2>&1
set +e
"$hearsay" apikey create --tenant acme --file "$f" --rps 6 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { echo "conflicting limits: exit $rc"; exit 1; }
[ "$(grep -c acme "$f")" = 2 ] || { cat "$f"; exit 1; }
echo ok
