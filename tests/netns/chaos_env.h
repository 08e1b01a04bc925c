// Shared parts of the chaos tests on the test bed (tests/netns): a cluster of `hearsay node`
// processes in network namespaces, an open-loop streaming load over the entry points, the outcome
// of every request (a complete answer or why not, its time to first token and who served it),
// view sampling for false deaths, and the figures. chaos_watch.h adds the dead-routing invariant
// and the per-scenario report line.
//
// Thread-safety: OpenLoopLoad is driven from the test's thread; its requests run on their own
// threads and only append to its outcome list under a lock.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "hearsay/launch/netns_bed.h"
#include "hearsay/launch/temp_dir.h"
#include "integration_env.h"

namespace hearsay::integration {

using Clock = std::chrono::steady_clock;

constexpr int kMaxTokens = 16;
constexpr auto kArrivalGap = 100ms;  // 10 requests per second, whatever the answers' latency

// One client request and how it ended.
struct Outcome {
  std::string phase;
  size_t entry = 0;
  std::chrono::milliseconds latency{0};
  std::string failure;  // empty: a complete answer
  // Time to the first event of a streaming answer (none if no event came).
  std::optional<std::chrono::milliseconds> ttft;
  std::string served_by;     // the answer's X-Hearsay-Served-By
  bool started = false;      // the answer had begun streaming (status 200 and an event)
  bool error_event = false;  // the stream carried an error event
  double start_ms = 0;       // when it was sent and ended, on the steady clock (SteadyMs)
  double end_ms = 0;
};

// Milliseconds on the steady clock: the daemon's clock in its decision records too.
inline double SteadyMs(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

// Why `r` is not a complete answer, or "" if it is one.
inline std::string Incomplete(const Result<HttpResponse>& r) {
  if (!r.ok()) return "transport: " + r.status().ToString();
  if (r->status != 200) return "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 200);
  const json body = BodyJson(*r);
  if (!body.contains("choices") || body["choices"].empty()) return "no choices: " + r->body;
  const json& choice = body["choices"][0];
  if (!choice.contains("finish_reason") || !choice["finish_reason"].is_string()) {
    return "no finish_reason: " + r->body.substr(0, 200);
  }
  if (!body.contains("usage") || body["usage"].value("completion_tokens", 0) <= 0) {
    return "no completion tokens: " + r->body.substr(0, 200);
  }
  return "";
}

// Why the streaming answer `r` is not complete (a finish_reason, a usage chunk with completion
// tokens, then [DONE], no error event), or "" if it is; fills o's ttft, served_by and flags.
inline std::string IncompleteStream(const Result<testkit::StreamOutcome>& r, Outcome* o) {
  if (!r.ok()) return "transport: " + r.status().ToString();
  const std::optional<std::string_view> served =
      http::FindHeader(r->headers, "x-hearsay-served-by");
  o->served_by = served ? std::string(*served) : "";
  if (r->first_event_at) {
    o->ttft =
        std::chrono::duration_cast<std::chrono::milliseconds>(*r->first_event_at - r->started);
  }
  if (r->status != 200) return "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 200);
  o->started = !r->events.empty();
  o->error_event = r->saw_error_event();
  if (o->error_event) {
    for (const testkit::TimedSseEvent& e : r->events) {
      if (e.event.data.find("\"error\"") != std::string::npos) {
        return "error event: " + e.event.data.substr(0, 200);
      }
    }
  }
  if (!r->transport.ok()) return "stream cut: " + r->transport.ToString();
  if (!r->saw_done()) return "no [DONE]";
  bool finished = false;
  int64_t completion_tokens = 0;
  for (const testkit::TimedSseEvent& e : r->events) {
    if (e.event.data == "[DONE]") continue;
    const json chunk = json::parse(e.event.data, nullptr, /*allow_exceptions=*/false);
    if (!chunk.is_object()) return "an event is not JSON: " + e.event.data.substr(0, 200);
    if (chunk.contains("choices") && chunk["choices"].is_array() && !chunk["choices"].empty() &&
        chunk["choices"][0].contains("finish_reason") &&
        chunk["choices"][0]["finish_reason"].is_string()) {
      finished = true;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
      completion_tokens = chunk["usage"].value("completion_tokens", int64_t{0});
    }
  }
  if (!finished) return "no finish_reason";
  if (completion_tokens <= 0) return "no completion tokens";
  return "";
}

// Sends one streaming completion of `prompt` (max_tokens tokens) to `address`, the entry node
// `entry`, and describes how it went.
inline Outcome StreamOne(const std::string& address, size_t entry, std::string phase,
                         const std::string& prompt, int max_tokens = kMaxTokens) {
  const auto start = Clock::now();
  Result<testkit::StreamOutcome> r =
      testkit::HttpPostStream(address, "/v1/completions",
                              CompletionBody(prompt, max_tokens, /*stream=*/true), kCallTimeout);
  const auto end = Clock::now();
  Outcome o;
  o.phase = std::move(phase);
  o.entry = entry;
  o.latency = std::chrono::duration_cast<std::chrono::milliseconds>(end - start);
  o.failure = IncompleteStream(r, &o);
  o.start_ms = SteadyMs(start);
  o.end_ms = SteadyMs(end);
  return o;
}

// An open-loop load: one streaming request every kArrivalGap, each on its own thread, to the
// entry nodes in turn (skipping excluded ones: a node the scenario has killed or stopped), with
// prompts from a few shared-prefix families (so requests are forwarded across the cluster) drawn
// from a fixed seed.
class OpenLoopLoad {
 public:
  explicit OpenLoopLoad(std::vector<std::string> entries) : entries_(std::move(entries)) {
    scheduler_ = std::thread([this] { Run(); });
  }
  ~OpenLoopLoad() { (void)Finish(); }

  // Labels the requests sent from now on, and restarts the phase's count.
  void SetPhase(std::string phase) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = std::move(phase);
    sent_in_phase_ = 0;
  }
  int sent_in_phase() const { return sent_in_phase_; }
  // Stops (or resumes) sending requests to entry i.
  void Exclude(size_t i, bool excluded) {
    std::lock_guard<std::mutex> lock(mu_);
    if (excluded) {
      excluded_.insert(i);
    } else {
      excluded_.erase(i);
    }
  }
  // Stops sending, waits for every answer (each bounded by kCallTimeout) and returns them all.
  std::vector<Outcome> Finish() {
    stop_ = true;
    if (scheduler_.joinable()) scheduler_.join();
    for (Request& r : requests_) r.thread.join();
    requests_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    return outcomes_;
  }

 private:
  void Run() {
    std::mt19937_64 rng(21);
    auto next = Clock::now();
    size_t turn = 0;
    for (size_t k = 0; !stop_; ++k) {
      const std::string prompt =
          Words("fam" + std::to_string(rng() % 4), 64) + " " + Words("req" + std::to_string(k), 8);
      std::string phase;
      size_t entry = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        phase = phase_;
        do {
          entry = turn++ % entries_.size();
        } while (excluded_.count(entry) > 0 && excluded_.size() < entries_.size());
      }
      ReapFinishedRequests();
      auto done = std::make_shared<std::atomic<bool>>(false);
      requests_.push_back({std::thread([this, entry, prompt, phase, done] {
                             Outcome o = StreamOne(entries_[entry], entry, phase, prompt);
                             {
                               std::lock_guard<std::mutex> lock(mu_);
                               outcomes_.push_back(std::move(o));
                             }
                             done->store(true);
                           }),
                           done});
      ++sent_in_phase_;
      next += kArrivalGap;
      std::this_thread::sleep_until(next);  // the arrival process, not a wait on a condition
    }
  }

  // One request's thread, and whether it has finished (then it can be joined at once).
  struct Request {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  // Joins the request threads that have finished. An unjoined thread keeps its stack mapped: an
  // hour's soak left ~50,000 of them, and every fork() (a heal's `nft`, a restart) then copied
  // 200 GB of address space maps, a cost that grew with the run.
  void ReapFinishedRequests() {
    for (size_t i = 0; i < requests_.size();) {
      if (!requests_[i].done->load()) {
        ++i;
        continue;
      }
      requests_[i].thread.join();
      requests_[i] = std::move(requests_.back());
      requests_.pop_back();
    }
  }

  const std::vector<std::string> entries_;
  std::atomic<int> sent_in_phase_{0};
  std::atomic<bool> stop_{false};
  std::thread scheduler_;
  std::vector<Request> requests_;  // touched only by the scheduler, then by Finish
  std::mutex mu_;
  std::string phase_ = "before";
  std::set<size_t> excluded_;
  std::vector<Outcome> outcomes_;
};

// Skips the test, loudly, where the bed cannot be made; otherwise makes a bed of `n` hosts and a
// cluster on it (node i in namespace i). Null (with a failure recorded) if either fails.
struct BedCluster {
  std::unique_ptr<launch::NetnsBed> bed;
  std::unique_ptr<LocalCluster> cluster;  // destroyed first: its processes keep namespaces busy
  bool netem = false;                     // the kernel has netem (else the nodes inject)
  // Where node i writes its decision records (--records): records[i]. The dead-routing check
  // (chaos_watch.h) reads them.
  std::unique_ptr<launch::TempDir> records_dir;
  std::vector<std::string> records;
  ~BedCluster() { cluster.reset(); }

  // Delays everything node i sends by `delay_ms` and loses its packets (netem) or its gossip
  // datagrams (in the daemon) with probability `loss`; 0 and 0 heal.
  Status DelayAndLose(size_t i, double delay_ms, double loss) {
    return netem ? bed->DelayAndLose(i, delay_ms, loss) : cluster->SetLinkFaults(i, delay_ms, loss);
  }
  // Which injection DelayAndLose uses, for the test's output.
  const char* injection() const {
    return netem ? "netem" : "in-daemon (POST /debug/faults; this kernel has no netem qdisc)";
  }
};

// The forward timeout the silent-peer scenarios give every node: far above kSilentPeerBound, so
// a request that waits for it (instead of the deadline from its expected time to first token)
// fails the bound.
inline constexpr const char* kLongForwardTimeoutMs = "30000";
// The longest a request entering at a healthy node may take while a peer drops its packets
// silently (one-way partition, SIGSTOP): a forward there is given up after its first-token
// deadline (limits.forward_deadline_floor_ms, 1 s, for these fast prompts) and retried.
inline constexpr auto kSilentPeerBound = 10s;

// Makes a bed of options.nodes hosts and starts the cluster `options` describes on it.
inline std::unique_ptr<BedCluster> StartBedCluster(LocalClusterOptions options) {
  const size_t n = options.nodes;
  auto out = std::make_unique<BedCluster>();
  Result<std::unique_ptr<launch::NetnsBed>> made = launch::NetnsBed::Create(n);
  if (!made.ok()) {
    ADD_FAILURE() << made.status().ToString();
    return nullptr;
  }
  out->bed = std::move(made).value();
  out->netem = out->bed->NetemAvailable();
  std::printf("chaos: delay/loss injection: %s\n", out->injection());
  // The test process reaches /debug/faults over the bridge, not loopback.
  options.extra_flags.push_back("--admin-allow-remote");
  Result<std::unique_ptr<launch::TempDir>> dir = launch::TempDir::Create("hearsay-chaos-records-");
  if (!dir.ok()) {
    ADD_FAILURE() << dir.status().ToString();
    return nullptr;
  }
  out->records_dir = std::move(dir).value();
  if (std::getenv("HEARSAY_KEEP_TEST_DIRS") != nullptr) {
    out->records_dir->Keep();
    std::printf("chaos: decision records kept in %s\n", out->records_dir->path().c_str());
  }
  // HEARSAY_TEST_BINARY runs another build of the daemon (an ASan one, for a crash hunt).
  if (const char* binary = std::getenv("HEARSAY_TEST_BINARY"); binary != nullptr && *binary) {
    options.hearsay_binary = binary;
    std::printf("chaos: nodes run %s\n", binary);
  }
  options.per_node_flags.resize(std::max(options.per_node_flags.size(), n));
  for (size_t i = 0; i < n; ++i) {
    options.node_hosts.push_back(out->bed->Address(i));
    options.node_exec_prefix.push_back(out->bed->ExecPrefix(i));
    out->records.push_back(out->records_dir->File("records-node-" + std::to_string(i) + ".jsonl"));
    options.per_node_flags[i].insert(options.per_node_flags[i].end(),
                                     {"--records", out->records.back()});
  }
  out->cluster = StartCluster(options);
  if (out->cluster == nullptr) return nullptr;
  return out;
}

inline std::unique_ptr<BedCluster> StartBedCluster(size_t n,
                                                   std::vector<std::string> extra_flags = {}) {
  LocalClusterOptions options = ClusterOptions(n);
  options.extra_flags = std::move(extra_flags);
  return StartBedCluster(std::move(options));
}

// "node-a sees node-b dead" for every node of `watchers` that lists a node of `watched` as dead
// or left (a false death when the scenario never faulted it). Nodes that do not answer are
// skipped: the next sample sees them.
inline std::vector<std::string> DeadAmong(LocalCluster& cluster,
                                          const std::vector<size_t>& watchers,
                                          const std::vector<size_t>& watched) {
  std::vector<std::string> out;
  for (size_t i : watchers) {
    Result<launch::ClusterView> view = cluster.View(i);
    if (!view.ok()) continue;
    for (size_t j : watched) {
      const launch::MemberInfo* m = view->Find(cluster.node(j).node_id);
      if (j != i && m != nullptr && (m->state == "dead" || m->state == "left")) {
        out.push_back(cluster.node(i).node_id + " sees " + m->node_id + " " + m->state);
      }
    }
  }
  return out;
}

inline std::chrono::milliseconds P99(std::vector<std::chrono::milliseconds> v) {
  if (v.empty()) return 0ms;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

// True if the failure of `o` is allowed: it entered at a faulted node (the client itself was
// talking to it when it failed), or it had started streaming from a faulted node's engine and
// ended with an error event.
inline bool FailureAllowed(const Outcome& o, const std::set<size_t>& faulted) {
  if (faulted.count(o.entry) > 0) return true;
  if (!o.started || !o.error_event) return false;
  for (size_t f : faulted) {
    if (o.served_by == "node-" + std::to_string(f)) return true;
  }
  return false;
}

// True if `o` had started streaming from a node on the other side of the partition a | b from
// its entry and ended with an error event: the entry aborts its forwards to a member it declares
// dead (docs/daemon.md), and cannot retry a request whose tokens the client has seen.
inline bool CutByPartition(const Outcome& o, const std::vector<size_t>& a,
                           const std::vector<size_t>& b) {
  if (!o.started || !o.error_event || o.served_by.rfind("node-", 0) != 0) return false;
  const size_t server = std::strtoul(o.served_by.c_str() + 5, nullptr, 10);
  auto in = [](const std::vector<size_t>& side, size_t n) {
    return std::find(side.begin(), side.end(), n) != side.end();
  };
  return (in(a, o.entry) && in(b, server)) || (in(b, o.entry) && in(a, server));
}

// Checks the outcomes (a failure is allowed only as FailureAllowed says, or as `also_allowed`
// does) and returns the figures per phase: "<phase>: N sent, F failed, S over 1 s, p99 X ms;".
inline std::string CheckOutcomes(
    const std::vector<Outcome>& outcomes, const std::vector<std::string>& phases,
    const std::set<size_t>& faulted_entries = {},
    const std::function<bool(const Outcome&)>& also_allowed = nullptr) {
  std::map<std::string, std::vector<std::chrono::milliseconds>> latencies;
  std::map<std::string, int> failed;
  std::map<std::string, int> slow;
  std::map<std::string, std::string> why;  // the first failure of each phase
  for (const Outcome& o : outcomes) {
    latencies[o.phase].push_back(o.latency);
    if (o.latency > 1s) ++slow[o.phase];
    if (o.failure.empty()) continue;
    ++failed[o.phase];
    if (why[o.phase].empty()) why[o.phase] = "node-" + std::to_string(o.entry) + ": " + o.failure;
    if (!FailureAllowed(o, faulted_entries) && !(also_allowed && also_allowed(o))) {
      ADD_FAILURE() << o.phase << " request via node-" << o.entry << " (served by "
                    << (o.served_by.empty() ? "nobody" : o.served_by)
                    << ") had no complete answer: " << o.failure;
    }
  }
  std::string figures;
  for (const std::string& p : phases) {
    figures += " " + p + ": " + std::to_string(latencies[p].size()) + " sent, " +
               std::to_string(failed[p]) + " failed" +
               (why[p].empty() ? "" : " (first: " + why[p].substr(0, 120) + ")") + ", " +
               std::to_string(slow[p]) + " over 1 s, p99 " +
               std::to_string(P99(latencies[p]).count()) + " ms;";
  }
  return figures;
}

// 0..n-1 without the nodes of `but`.
inline std::vector<size_t> AllBut(size_t n, const std::set<size_t>& but) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (but.count(i) == 0) out.push_back(i);
  }
  return out;
}

// Every node's http address, in order: the load's entry points.
inline std::vector<std::string> Entries(LocalCluster& cluster) {
  std::vector<std::string> entries;
  for (size_t i = 0; i < cluster.size(); ++i) entries.push_back(cluster.node(i).http_address);
  return entries;
}

// The slowest request of `phase` that entered at a node outside `faulted_entries`.
inline std::chrono::milliseconds Slowest(const std::vector<Outcome>& outcomes,
                                         const std::string& phase,
                                         const std::set<size_t>& faulted_entries = {}) {
  std::chrono::milliseconds slowest{0};
  for (const Outcome& o : outcomes) {
    if (o.phase == phase && faulted_entries.count(o.entry) == 0) {
      slowest = std::max(slowest, o.latency);
    }
  }
  return slowest;
}

inline long long Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace hearsay::integration
