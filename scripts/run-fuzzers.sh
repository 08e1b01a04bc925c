#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, starting from fuzz/corpus/<target>/.
# A crash fails the run; the crashing input is left in build/fuzz-artifacts/ so it can be moved to
# fuzz/regressions/<target>/, where the ordinary test suite replays it forever after.
# Every target runs even if another fails; the exit status is non-zero if any failed.
# Usage: run-fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
build_dir=${1:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
artifacts="$root/build/fuzz-artifacts"
mkdir -p "$artifacts"
shopt -s nullglob
targets=("$build_dir"/src/hearsay/*/hearsay_*_fuzz)
if [ ${#targets[@]} -eq 0 ]; then
  echo "run-fuzzers: no fuzz targets in $build_dir"
  exit 0
fi
# Targets run side by side, one per core (FUZZ_JOBS, default nproc): each is single-threaded.
jobs=${FUZZ_JOBS:-$(nproc)}
results=$(mktemp -d)
run_one() {
  local bin=$1 name stem work seeds=() rc
  name=$(basename "$bin")
  stem=${name#hearsay_}
  work=$(mktemp -d)
  for d in "$root/fuzz/corpus/$stem" "$root/fuzz/regressions/$stem"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  set +e
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$stem-" "$work" "${seeds[@]}" >"$work.log" 2>&1
  rc=$?
  set -e
  { echo "run-fuzzers: $stem for ${seconds}s"; tail -n 12 "$work.log"; } >"$results/$stem.out"
  echo "$rc" >"$results/$stem.rc"
  rm -f "$work.log"
  rm -rf "$work"
}
for bin in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$bin" &
done
wait
failed=()
for bin in "${targets[@]}"; do
  stem=$(basename "$bin")
  stem=${stem#hearsay_}
  cat "$results/$stem.out"
  rc=$(cat "$results/$stem.rc" 2>/dev/null || echo 1)
  if [ "$rc" -ne 0 ]; then
    echo "run-fuzzers: $stem FAILED (exit $rc); inputs in $artifacts/$stem-*;" \
      "move them to fuzz/regressions/$stem/ once fixed" >&2
    failed+=("$stem")
  fi
done
rm -rf "$results"
if [ ${#failed[@]} -ne 0 ]; then
  echo "run-fuzzers: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzzers: all ${#targets[@]} targets passed"
