#!/usr/bin/env bash
# Fails if core code reads a clock, draws OS randomness, starts a thread, sleeps, or includes
# networking. The core acts only through env/.
#   core:        common env simenv prefix gossip route engine node (every file)
#   pure edge:   api, whose request/response codec, tokenizer and scanners are held to the same
#                rule; except api/metrics.*, edge code proper: its registry takes a mutex and is
#                updated and rendered on the I/O threads.
# Tests (*_test.cc) are exempt. The module tiers are in the top-level CMakeLists.txt.
# Usage: check-core-purity.sh SRC_ROOT   (the folder that holds the module folders)
set -uo pipefail
root=${1:?usage: check-core-purity.sh SRC_ROOT}
core_modules=(common env simenv prefix gossip route engine node)
pure_edge_modules=(api)
edge_files_exempt='^[^:]*/api/metrics\.(h|cc):'
dirs=()
for d in "${core_modules[@]}" "${pure_edge_modules[@]}"; do
  [ -d "$root/$d" ] && dirs+=("$root/$d")
done
if [ ${#dirs[@]} -eq 0 ]; then
  echo "check-core-purity: no core folders under $root" >&2
  exit 2
fi
pattern='std::chrono::(steady_clock|system_clock|high_resolution_clock|utc_clock)::now|random_device|std::thread|std::jthread|std::async|sleep_for|sleep_until|[^_a-zA-Z0-9]rand\(|[^_a-zA-Z0-9]srand\(|[^_a-zA-Z0-9]time\(NULL|gettimeofday|clock_gettime|#include *[<"](asio|boost/asio|boost/beast|sys/socket\.h|thread|random)'
hits=$(grep -rnE --include='*.h' --include='*.cc' "$pattern" "${dirs[@]}" | grep -v '_test\.cc:' |
  grep -vE "$edge_files_exempt")
if [ -n "$hits" ]; then
  echo "check-core-purity: core code must act only through env/ (Clock, Scheduler, Rng, Transport):"
  echo "$hits"
  exit 1
fi
echo "check-core-purity: ${#dirs[@]} folders clean (core and pure edge)"
