#include "hearsay/sim/parallel_runs.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace hearsay::sim {

Status PrepareRuns(const std::string& out_dir, int seeds, int jobs, bool has_run) {
  if (out_dir.empty()) return InvalidArgumentError("out_dir is empty");
  if (seeds < 0 || jobs < 1) return InvalidArgumentError("seeds must be >= 0 and jobs >= 1");
  if (!has_run) return InvalidArgumentError("no run function");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return InternalError("cannot create " + out_dir + ": " + ec.message());
  return OkStatus();
}

std::optional<RunFailure> RunParallel(size_t count, int jobs,
                                      const std::function<Status(size_t)>& one,
                                      const std::function<void(uint64_t, uint64_t)>& progress) {
  std::vector<Status> errors(count);
  std::atomic<size_t> next{0};
  std::mutex mu;
  uint64_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      errors[i] = one(i);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (progress) progress(done, count);
    }
  };
  const int threads_wanted = std::clamp<int>(jobs, 1, static_cast<int>(std::max<size_t>(1, count)));
  std::vector<std::thread> threads;
  for (int j = 1; j < threads_wanted; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < count; ++i) {
    if (!errors[i].ok()) return RunFailure{i, errors[i]};
  }
  return std::nullopt;
}

}  // namespace hearsay::sim
