#!/usr/bin/env bash
# `hearsay ca init` and `hearsay ca issue` (http/certificates.h): key files are mode 0600, the node
# certificate chains to the CA (checked by the openssl command) and names its node as CN and as
# the URI hearsay:node:ID beside the DNS names and addresses given, and nothing is overwritten.
# Usage: cli_ca_test.sh HEARSAY_BINARY SCRATCH_DIR
set -eu
hearsay="$1"
d="$2.$$"
rm -rf "$d"
trap 'rm -rf "$d"' EXIT
umask 022
"$hearsay" ca init --dir "$d" >/dev/null
"$hearsay" ca issue --dir "$d" --node-id gpu-a --dns gpu-a.example.net --ip 203.0.113.7 \
  --days 30 >/dev/null
for k in "$d/ca.key" "$d/gpu-a.key"; do
  [ "$(stat -c %a "$k")" = 600 ] || { echo "$k is mode $(stat -c %a "$k")"; exit 1; }
done
openssl verify -CAfile "$d/ca.crt" "$d/gpu-a.crt" | grep -q ': OK$' || { echo "no chain"; exit 1; }
text=$(openssl x509 -in "$d/gpu-a.crt" -noout -text)
for want in "CN = gpu-a" "URI:hearsay:node:gpu-a" "DNS:gpu-a.example.net" \
    "IP Address:203.0.113.7" "TLS Web Server Authentication, TLS Web Client Authentication"; do
  grep -qF "$want" <<<"$text" || { echo "missing: $want"; echo "$text"; exit 1; }
done
openssl x509 -in "$d/ca.crt" -noout -text | grep -q "CA:TRUE" || { echo "CA not a CA"; exit 1; }
before=$(sha256sum "$d/gpu-a.key")
set +e
"$hearsay" ca issue --dir "$d" --node-id gpu-a >/dev/null 2>&1
again=$?
"$hearsay" ca init --dir "$d" >/dev/null 2>&1
init_again=$?
"$hearsay" ca issue --dir "$d" --node-id "../x" >/dev/null 2>&1
bad_id=$?
set -e
[ "$again" != 0 ] && [ "$init_again" != 0 ] || { echo "overwrote a file"; exit 1; }
[ "$bad_id" = 2 ] || { echo "a node id with a slash: exit $bad_id"; exit 1; }
[ "$before" = "$(sha256sum "$d/gpu-a.key")" ] || { echo "the key changed"; exit 1; }
echo ok
