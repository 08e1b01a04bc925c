#!/usr/bin/env bash
# The Debian package (`make deb`, CPack) and `cmake --install`, built and inspected:
#   - the package holds the binary, the unit, the example /etc/hearsay/node.toml (a conffile)
#     and the docs; its maintainer scripts add the `hearsay` system user and start nothing;
#   - the unit passes `systemd-analyze verify` without a warning and waits for the key file;
#   - installed with dpkg into a private root, an upgrade keeps an edited node.toml;
#   - the packaged binary runs: `hearsay version`, and a node started from the packaged
#     node.toml answers GET /status;
#   - `cmake --install` (DESTDIR) places the same files, and keeps an existing node.toml.
# Usage: package_test.sh BUILD_DIR    (the binary must be built; about 10 s)
set -euo pipefail
build=$(cd "$1" && pwd)
dir=$(mktemp -d)
node_pid=
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg dpkg-deb systemd-analyze; do
  command -v "$tool" > /dev/null || fail "$tool is missing (scripts/install-deps.sh)"
done

# Two versions, for an upgrade.
# (CPack writes packages/ under its working directory.)
mkdir -p "$dir/v1" "$dir/v2"
(cd "$dir/v1" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$dir/v1" > "$dir/cpack1.log") ||
  fail "cpack: $(cat "$dir/cpack1.log")"
(cd "$dir/v2" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$dir/v2" \
  -D CPACK_PACKAGE_VERSION=99.0.0 > "$dir/cpack2.log") || fail "cpack: $(cat "$dir/cpack2.log")"
deb1=$(ls "$dir"/v1/packages/hearsay_*_amd64.deb)
deb2=$(ls "$dir"/v2/packages/hearsay_99.0.0_*.deb)

dpkg-deb -c "$deb1" > "$dir/contents"
for f in ./usr/bin/hearsay ./lib/systemd/system/hearsay.service ./etc/hearsay/node.toml \
         ./usr/share/doc/hearsay/deploy.md ./usr/share/doc/hearsay/reference.md \
         ./usr/share/doc/hearsay/monitoring/grafana-dashboard.json \
         ./usr/share/doc/hearsay/monitoring/alerts.yml \
         ./usr/share/doc/hearsay/deploy/kubernetes/statefulset.yaml; do
  grep -q " $f\$" "$dir/contents" || fail "the package lacks $f"
done
grep -q "rwxr-xr-x root/root .* ./usr/bin/hearsay$" "$dir/contents" || fail "binary mode/owner"
dpkg-deb -e "$deb1" "$dir/control"
[ "$(cat "$dir/control/conffiles")" = /etc/hearsay/node.toml ] || fail "conffiles: $(cat "$dir/control/conffiles")"
grep -q "^Depends:.*adduser" "$dir/control/control" || fail "no Depends on adduser"
grep -q "adduser --system --group" "$dir/control/postinst" || fail "postinst adds no system user"
! grep -q "systemctl start\|systemctl restart\|enable --now" "$dir/control/postinst" ||
  fail "postinst starts the service"
for s in postinst prerm postrm; do sh -n "$dir/control/$s" || fail "$s: syntax"; done

# The unit: verified by systemd (its binary path pointed at the extracted one) and waiting for
# the key file.
dpkg-deb -x "$deb1" "$dir/root"
unit="$dir/root/lib/systemd/system/hearsay.service"
grep -q "^ConditionPathExists=/etc/hearsay/cluster.key$" "$unit" || fail "the unit does not wait for the key"
grep -q "^ExecStart=/usr/bin/hearsay node --config /etc/hearsay/node.toml$" "$unit" || fail "ExecStart"
grep -q "^User=hearsay$" "$unit" || fail "the unit does not run as hearsay"
mkdir -p "$dir/verify"
sed "s|^ExecStart=/usr/bin/hearsay|ExecStart=$dir/root/usr/bin/hearsay|" "$unit" > "$dir/verify/hearsay.service"
systemd-analyze verify "$dir/verify/hearsay.service" > "$dir/verify.log" 2>&1 ||
  fail "systemd-analyze verify: $(cat "$dir/verify.log")"
[ ! -s "$dir/verify.log" ] || fail "systemd-analyze verify warns: $(cat "$dir/verify.log")"

# dpkg into a private root (maintainer scripts see DPKG_ROOT and leave this machine alone):
# install, edit the conffile, upgrade, the edit is kept.
inst="$dir/inst"
mkdir -p "$inst/var/lib/dpkg/info" "$inst/var/lib/dpkg/updates"
touch "$inst/var/lib/dpkg/status"
dpkg_inst() {
  dpkg --instdir="$inst" --admindir="$inst/var/lib/dpkg" --force-script-chrootless \
    --force-not-root --force-depends -i "$1" < /dev/null > "$dir/dpkg.log" 2>&1 ||
    fail "dpkg -i $1: $(cat "$dir/dpkg.log")"
}
dpkg_inst "$deb1"
echo '# edited by the operator' >> "$inst/etc/hearsay/node.toml"
dpkg_inst "$deb2"
grep -q "^Version: 99.0.0" <(dpkg --admindir="$inst/var/lib/dpkg" -s hearsay) || fail "no upgrade"
tail -1 "$inst/etc/hearsay/node.toml" | grep -q "edited by the operator" ||
  fail "the upgrade replaced the edited node.toml"

# The packaged binary runs, with the packaged configuration (addresses and files overridden).
bin="$dir/root/usr/bin/hearsay"
"$bin" version | grep -q "hearsay" || fail "hearsay version"
"$bin" keygen --out "$dir/cluster.key"
"$bin" node --config "$dir/root/etc/hearsay/node.toml" --cluster-key-file "$dir/cluster.key" \
  --keyring-file "$dir/keyring" --http 127.0.0.1:0 --gossip 127.0.0.1:0 \
  > "$dir/node.out" 2> "$dir/node.log" &
node_pid=$!
for _ in $(seq 1 200); do
  grep -qs "^listening" "$dir/node.out" && break
  kill -0 "$node_pid" 2>/dev/null || fail "the packaged node exited: $(cat "$dir/node.log")"
  sleep 0.05
done
http=$(sed -n 's/^listening http=\([^ ]*\).*/\1/p' "$dir/node.out")
[ -n "$http" ] || fail "the packaged node did not start: $(cat "$dir/node.log")"
"$bin" status --json --node "http://$http" | grep -q '"policy": "hearsay"' || fail "GET /status"
"$bin" status --node "http://$http" > "$dir/status.txt" || fail "hearsay status"
grep -q "^MEMBER .* TTFT p99" "$dir/status.txt" && grep -q " \* .*alive" "$dir/status.txt" ||
  fail "hearsay status table: $(cat "$dir/status.txt")"

# cmake --install: the same places; an existing node.toml is kept.
stage="$dir/stage"
mkdir -p "$stage/etc/hearsay"
echo '# mine' > "$stage/etc/hearsay/node.toml"
DESTDIR="$stage" cmake --install "$build" --prefix /usr/local > "$dir/install.log" ||
  fail "cmake --install: $(cat "$dir/install.log")"
[ -x "$stage/usr/local/bin/hearsay" ] || fail "cmake --install: no binary"
grep -q "^ExecStart=/usr/local/bin/hearsay " "$stage/lib/systemd/system/hearsay.service" ||
  fail "cmake --install: the unit does not name /usr/local/bin/hearsay"
[ "$(cat "$stage/etc/hearsay/node.toml")" = "# mine" ] || fail "cmake --install replaced node.toml"
[ -f "$stage/usr/local/share/doc/hearsay/deploy.md" ] || fail "cmake --install: no docs"
echo ok
