#!/usr/bin/env bash
# The sanitizer reports of a multi-process test run, collected in one folder.
#
# In a sanitizer build the integration tests run with TSAN_OPTIONS/ASAN_OPTIONS/UBSAN_OPTIONS
# log_path=<dir>/report: every process (the test binaries, each `hearsay node` they start, the
# nodes `hearsay demo` starts) writes a report.<pid> file when it finds an error, even if it is
# later killed with SIGKILL, which a report on stderr alone would not survive (the node logs go
# with the cluster's temp dir).
#
#   sanitizer_reports.sh reset DIR   empty DIR (ctest fixture setup, before the first test)
#   sanitizer_reports.sh check DIR   fail, printing every report, if DIR holds any (cleanup)
set -euo pipefail

mode=${1:?usage: sanitizer_reports.sh reset|check DIR}
dir=${2:?usage: sanitizer_reports.sh reset|check DIR}

case "$mode" in
  reset)
    rm -rf "$dir"
    mkdir -p "$dir"
    ;;
  check)
    shopt -s nullglob
    reports=("$dir"/report.*)
    if ((${#reports[@]} == 0)); then
      echo "no sanitizer reports in $dir"
      exit 0
    fi
    echo "${#reports[@]} sanitizer report file(s) in $dir:" >&2
    for r in "${reports[@]}"; do
      echo "=== $r" >&2
      head -c 20000 "$r" >&2
    done
    exit 1
    ;;
  *)
    echo "sanitizer_reports.sh: unknown mode '$mode' (reset or check)" >&2
    exit 2
    ;;
esac
