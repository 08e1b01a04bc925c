// One `hearsay demo --twin --json` run checked against the twin's bounds, shared by the loopback
// (twin_cli_test.cc) and the test-bed (tests/netns/twin_bed_test.cc) checks.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace hearsay::clitest {

// Runs the demo with `args` (which must ask for --twin --json) and returns "" if every policy's
// twin is within `mean_bound` of its measured mean TTFT (relative) and `hit_bound(policy)` of its
// hit rate, with a p99 above its mean; else what missed, one row a line. `tag` prefixes the
// printed figures.
inline std::string TwinMisses(const std::vector<std::string>& args, std::chrono::seconds timeout,
                              size_t policies, double mean_bound,
                              const std::function<double(const std::string&)>& hit_bound,
                              const std::string& tag = "") {
  HearsayRun run(args);
  if (!run.started()) return "the demo did not start";
  if (!run.process().Wait(timeout).ok()) return "the demo did not finish: " + run.output();
  if (run.process().exit_code() != 0) return "the demo failed: " + run.output();
  if (!run.Children().empty()) return "hearsay node processes left behind";
  const nlohmann::json j = nlohmann::json::parse(JsonTail(run.output(), '['), nullptr, false);
  if (!j.is_array() || j.size() != policies) return "not every policy: " + run.output();
  std::string misses;
  for (const nlohmann::json& row : j) {
    if (!row.contains("twin_mean_ttft_ms") || !row.contains("twin_p99_ttft_ms") ||
        !row.contains("twin_hit_rate") || row["failed"] != 0) {
      return "a row without the twin's figures or with failures: " + row.dump();
    }
    const std::string policy = row["policy"].get<std::string>();
    const double mean = row["mean_ttft_ms"].get<double>();
    const double twin_mean = row["twin_mean_ttft_ms"].get<double>();
    const double error = std::abs(twin_mean - mean) / mean;
    const double hit_error =
        std::abs(row["twin_hit_rate"].get<double>() - row["hit_rate"].get<double>());
    std::printf("%s%-8s mean TTFT %.1f ms, twin %.1f ms (error %.1f%%); hit rate %.3f, twin %.3f\n",
                tag.c_str(), policy.c_str(), mean, twin_mean, 100 * error,
                row["hit_rate"].get<double>(), row["twin_hit_rate"].get<double>());
    if (error > mean_bound || hit_error > hit_bound(policy) ||
        row["twin_p99_ttft_ms"].get<double>() <= twin_mean) {
      misses += row.dump() + "\n";
    }
  }
  return misses;
}

}  // namespace hearsay::clitest
