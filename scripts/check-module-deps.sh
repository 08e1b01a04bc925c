#!/usr/bin/env bash
# Fails if a module reaches up the layer order, or if the shipped binary carries test code.
#
# 1. The layer order is the order of the add_subdirectory(src/hearsay/<module>) lines in ROOT's
#    CMakeLists.txt: a module may use only modules listed before it, and itself. Every
#    `#include "hearsay/<other>/..."` in src/hearsay/<module>/ is checked against it, in library
#    sources, tests and fuzzers alike (arrows point down, from tests too).
# 2. Test-only modules (test_only below) are used by tests only: a module's library sources (not
#    its *_test.cc, *test_util.h, test_*.h or *_test_*.h files) must not include them.
# 3. With BUILD_DIR (a configured build), the `hearsay` executable's link line must name no
#    test-only library.
# Usage: check-module-deps.sh ROOT [BUILD_DIR]
set -uo pipefail
root=${1:?usage: check-module-deps.sh ROOT [BUILD_DIR]}
build=${2:-}
test_only=(testutil testkit)

mapfile -t order < <(grep -oE '^[[:space:]]*add_subdirectory\(src/hearsay/[a-z_]+\)' \
  "$root/CMakeLists.txt" | sed -E 's/.*src\/hearsay\/([a-z_]+)\)/\1/')
if [ ${#order[@]} -eq 0 ]; then
  echo "check-module-deps: no add_subdirectory(src/hearsay/...) lines in $root/CMakeLists.txt" >&2
  exit 2
fi
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done

is_test_file() {
  local base=${1##*/}
  [[ $base =~ _test\.cc$ || $base =~ test_util\.h$ || $base =~ ^test_ || $base =~ _test_ ]]
}

failures=()
for mod in "${order[@]}"; do
  dir="$root/src/hearsay/$mod"
  [ -d "$dir" ] || { failures+=("$mod: listed in CMakeLists.txt but $dir is missing"); continue; }
  while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    used=$(sed -E 's/.*#include *"hearsay\/([a-z_]+)\/.*/\1/' <<<"$rest")
    if [ -z "${rank[$used]+x}" ]; then
      failures+=("$file:$line: includes hearsay/$used/, which is not a module in the layer order")
    elif [ "${rank[$used]}" -gt "${rank[$mod]}" ]; then
      failures+=("$file:$line: $mod includes hearsay/$used/, which is above it in the layer order")
    elif [[ " ${test_only[*]} " == *" $used "* && " ${test_only[*]} " != *" $mod "* ]] &&
      ! is_test_file "$file"; then
      failures+=("$file:$line: library code of $mod includes the test-only module $used")
    fi
  done < <(grep -rnE --include='*.h' --include='*.cc' '^[[:space:]]*#include *"hearsay/[a-z_]+/' "$dir" |
    sed -E 's/^([^:]*:[0-9]+):/\1:/')
done

if [ -n "$build" ]; then
  # The link line: Makefiles keep it in link.txt, Ninja in the executable's build statement.
  link=$(cat "$build/src/hearsay/cli/CMakeFiles/hearsay.dir/link.txt" 2>/dev/null ||
    awk '/^build hearsay:/ {on = 1} on && /^$/ {exit} on' "$build/build.ninja" 2>/dev/null)
  if [ -z "$link" ]; then
    failures+=("no link line for the hearsay executable under $build")
  else
    for t in "${test_only[@]}"; do
      grep -q "libhearsay_$t\.a" <<<"$link" && failures+=("the hearsay executable links hearsay_$t")
    done
  fi
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "check-module-deps: ${#failures[@]} dependency violation(s) (layer order: ${order[*]}):"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "check-module-deps: ${#order[@]} modules, every include points down (${order[*]})"
