// The checks and the report every chaos scenario shares, beside chaos_env.h:
//   - DeadRoutingWatch: the invariant "no request is routed to a member that every other node has
//     declared dead for longer than kDeadRoutingGrace" (launch/dead_routing.h), fed by a thread
//     that samples every node's GET /cluster and reads the nodes' decision records (--records:
//     every routing attempt and its time), and at the end by each answer's X-Hearsay-Served-By;
//   - Report: one greppable line per scenario, "chaos-report: scenario=... sent=... ...".
//
// Thread-safety: DeadRoutingWatch samples on its own thread, which only reads the cluster's
// fixed facts (node addresses) and the records files; the test's thread calls Finish.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>

#include "chaos_env.h"
#include "hearsay/launch/dead_routing.h"

namespace hearsay::integration {

// How long after every other node lists a member dead a routing to it counts as a violation: the
// spread of one sample of the views (each GET /cluster is bounded by 2 s, the time a stopped
// node takes to not answer) with slack; the spans themselves are measured conservatively.
constexpr auto kDeadRoutingGrace = 3s;
constexpr auto kViewSamplePeriod = 500ms;

class DeadRoutingWatch {
 public:
  DeadRoutingWatch(LocalCluster& cluster, std::vector<std::string> records)
      : cluster_(cluster),
        records_(std::move(records)),
        offsets_(records_.size(), 0),
        first_lines_(records_.size()),
        checker_(static_cast<double>(std::chrono::milliseconds(kDeadRoutingGrace).count())),
        started_ms_(SteadyMs(Clock::now())) {
    thread_ = std::thread([this] { Run(); });
  }
  ~DeadRoutingWatch() { StopSampling(); }

  // Stops sampling, reads the records' rest, adds the outcomes' X-Hearsay-Served-By, and records
  // a test failure for every violation (and for unreadable records). Returns the figures:
  // "dead_for_all_routed=V routings_checked=R dead_spans=S view_samples=N".
  std::string Finish(const std::vector<Outcome>& outcomes) {
    StopSampling();
    ReadRecords();
    for (const Outcome& o : outcomes) {
      if (o.served_by.empty()) continue;
      checker_.AddRouting({"node-" + std::to_string(o.entry), o.served_by, o.start_ms, o.end_ms,
                           "X-Hearsay-Served-By"});
    }
    const std::vector<std::string> violations = checker_.Violations();
    for (size_t k = 0; k < violations.size() && k < 5; ++k) ADD_FAILURE() << violations[k];
    EXPECT_EQ(bad_lines_, 0u) << "unreadable decision record lines, first: " << first_bad_;
    EXPECT_EQ(off_clock_, 0u) << "decision records whose times are not on the test's steady "
                                 "clock (the dead-routing check needs one clock)";
    EXPECT_GT(checker_.samples(), 0u) << "no sample of the views was taken";
    return "dead_for_all_routed=" + std::to_string(violations.size()) +
           " routings_checked=" + std::to_string(checker_.routings()) +
           " dead_spans=" + std::to_string(checker_.Spans().size()) +
           " view_samples=" + std::to_string(checker_.samples());
  }

 private:
  void StopSampling() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      Sample();
      ReadRecords();
      lock.lock();
      // The sampling period, not a wait for a condition: woken early only to stop.
      wake_.wait_for(lock, kViewSamplePeriod, [this] { return stop_; });
    }
  }

  // Every node's view at once (a stopped node takes the probe's 2 s to not answer).
  void Sample() {
    const double begin = SteadyMs(Clock::now());
    std::vector<std::future<Result<launch::ClusterView>>> pending;
    for (size_t i = 0; i < cluster_.size(); ++i) {
      pending.push_back(std::async(std::launch::async, [this, i] { return cluster_.View(i); }));
    }
    std::vector<launch::ClusterView> views;
    for (auto& p : pending) {
      Result<launch::ClusterView> v = p.get();
      if (v.ok()) views.push_back(std::move(v).value());
    }
    checker_.AddSample(begin, SteadyMs(Clock::now()), views);
  }

  // The complete lines added to each records file since the last read. A restarted node starts
  // its file again (it truncates it): a shorter file or another first line is read from its
  // start.
  void ReadRecords() {
    const double now = SteadyMs(Clock::now());
    for (size_t i = 0; i < records_.size(); ++i) {
      std::ifstream in(records_[i], std::ios::binary);
      if (!in) continue;
      in.seekg(0, std::ios::end);
      const std::streamoff size = in.tellg();
      in.seekg(0);
      std::string line;
      if (!std::getline(in, line) || in.eof()) continue;  // no complete line yet
      if (size < offsets_[i] || line != first_lines_[i]) offsets_[i] = 0;
      first_lines_[i] = line;
      in.seekg(offsets_[i]);
      while (std::getline(in, line)) {
        if (in.eof()) break;  // a line still being written: read it next time
        offsets_[i] += static_cast<std::streamoff>(line.size()) + 1;
        Result<std::vector<launch::Routing>> routings = launch::RoutingsOfRecordLine(line);
        if (!routings.ok()) {
          if (bad_lines_++ == 0) first_bad_ = line.substr(0, 200);
          continue;
        }
        for (launch::Routing& r : *routings) {
          if (r.earliest_ms < started_ms_ - 60000 || r.earliest_ms > now + 1000) ++off_clock_;
          checker_.AddRouting(std::move(r));
        }
      }
    }
  }

  LocalCluster& cluster_;
  const std::vector<std::string> records_;
  std::vector<std::streamoff> offsets_;
  std::vector<std::string> first_lines_;
  launch::DeadRoutingChecker checker_;  // the sampling thread's until Finish joins it
  const double started_ms_;
  size_t bad_lines_ = 0;
  size_t off_clock_ = 0;
  std::string first_bad_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// The p99 of the times to first token of the complete answers of `phase`, or -1 if none.
inline long long P99Ttft(const std::vector<Outcome>& outcomes, const std::string& phase) {
  std::vector<std::chrono::milliseconds> ttfts;
  for (const Outcome& o : outcomes) {
    if (o.phase == phase && o.failure.empty() && o.ttft) ttfts.push_back(*o.ttft);
  }
  return ttfts.empty() ? -1 : static_cast<long long>(P99(ttfts).count());
}

// The first word of a failure ("transport", "HTTP 503", "error event", ...), for the report.
inline std::string FailureKind(const std::string& failure) {
  const size_t colon = failure.find(':');
  std::string kind = failure.substr(0, colon);
  for (char& c : kind) {
    if (c == ' ') c = '-';
  }
  return kind;
}

// Prints the scenario's report line:
//   chaos-report: scenario=S sent=N completed=C failed=F failed_why=K:n,... p99_ttft_before_ms=
//   p99_ttft_during_ms= p99_ttft_after_ms= reconverge_s= <dead-routing figures>
// `phases` are the before, during and after phases' names; a phase without a streamed complete
// answer and a reconverge_s < 0 print "n/a".
inline void Report(const std::string& scenario, const std::vector<Outcome>& outcomes,
                   const std::array<std::string, 3>& phases, double reconverge_s,
                   const std::string& dead_routing) {
  size_t failed = 0;
  std::map<std::string, int> why;
  for (const Outcome& o : outcomes) {
    if (o.failure.empty()) continue;
    ++failed;
    ++why[FailureKind(o.failure)];
  }
  std::string why_text;
  for (const auto& [kind, count] : why) {
    why_text += (why_text.empty() ? "" : ",") + kind + ":" + std::to_string(count);
  }
  char reconverge[32] = "n/a";
  if (reconverge_s >= 0) std::snprintf(reconverge, sizeof reconverge, "%.1f", reconverge_s);
  auto ttft = [&](const std::string& phase) {
    const long long ms = P99Ttft(outcomes, phase);
    return ms < 0 ? std::string("n/a") : std::to_string(ms);
  };
  std::printf(
      "chaos-report: scenario=%s sent=%zu completed=%zu failed=%zu failed_why=%s "
      "p99_ttft_before_ms=%s p99_ttft_during_ms=%s p99_ttft_after_ms=%s reconverge_s=%s %s\n",
      scenario.c_str(), outcomes.size(), outcomes.size() - failed, failed,
      why_text.empty() ? "none" : why_text.c_str(), ttft(phases[0]).c_str(),
      ttft(phases[1]).c_str(), ttft(phases[2]).c_str(), reconverge, dead_routing.c_str());
  std::fflush(stdout);
}

}  // namespace hearsay::integration
