// hearsay_hostile_body: how a running node answers bodies shaped to be expensive, and whether its
// /health stays responsive meanwhile (issue 16; scripts/bench-hostile-body.sh starts the nodes
// and runs this against each).
//
// For every shape of api/hostile_json_test_util.h (many keys, long escapes, wide and deep arrays,
// long numbers, random mixes) and every body size, for --seconds: --posters threads POST the body
// to /v1/completions back to back while one prober GETs /health every --probe-ms, each request
// on a fresh connection. First the prober runs alone (the "idle" row). Prints one Markdown table
// row per shape and size: the answers' statuses, the POST's median time and that time per MiB
// (linear work keeps it flat across sizes), and /health's median, p99 and max latency with the
// count over --bound-ms. The bodies name --model; the script names one the node does not serve,
// so a body within the budget is parsed whole and answered 404 without engine work.
//
// Exit status: 0; 1 with --fail-over-bound when a /health p99 exceeded --bound-ms; 2: bad flags.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/api/hostile_json_test_util.h"
#include "hearsay/common/percentile.h"
#include "hearsay/http/sync_call.h"

namespace {

namespace http = hearsay::http;
namespace hostile = hearsay::api::testing;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Options {
  std::string node;
  std::string model = "hearsay-sim";
  double seconds = 2;
  int posters = 1;
  int probe_ms = 10;
  double bound_ms = 50;
  std::vector<size_t> sizes = {256 * 1024, 1024 * 1024};
  std::vector<std::string> shapes;
  bool fail_over_bound = false;
  std::string label = "node";
};

struct Cell {
  std::vector<double> post_ms;
  std::map<int, int> statuses;  // HTTP status (0: no answer) -> count
  std::vector<double> health_ms;
  int health_failures = 0;
};

// /health every probe_ms until `stop`, then sorted latencies.
void Probe(const Options& o, const std::atomic<bool>& stop, Cell* cell) {
  while (!stop.load()) {
    const Clock::time_point start = Clock::now();
    const auto r = http::GetSync(o.node, "/health", std::chrono::seconds(10));
    const double ms = MsSince(start);
    if (r.ok() && r->status == 200) {
      cell->health_ms.push_back(ms);
    } else {
      ++cell->health_failures;
    }
    const double rest = o.probe_ms - ms;
    if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(rest));
  }
  std::sort(cell->health_ms.begin(), cell->health_ms.end());
}

Cell Run(const Options& o, const std::string* body) {
  Cell cell;
  std::atomic<bool> stop{false};
  std::thread prober([&] { Probe(o, stop, &cell); });
  std::vector<std::thread> posters;
  std::vector<Cell> posted(body == nullptr ? 0 : o.posters);
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(o.seconds));
  for (Cell& mine : posted) {
    posters.emplace_back([&o, body, end, &mine] {
      while (Clock::now() < end) {
        const Clock::time_point start = Clock::now();
        const auto r =
            http::PostJsonSync(o.node, "/v1/completions", *body, std::chrono::seconds(60));
        mine.post_ms.push_back(MsSince(start));
        ++mine.statuses[r.ok() ? r->status : 0];
      }
    });
  }
  if (body == nullptr) std::this_thread::sleep_until(end);
  for (std::thread& t : posters) t.join();
  stop = true;
  prober.join();
  for (const Cell& c : posted) {
    cell.post_ms.insert(cell.post_ms.end(), c.post_ms.begin(), c.post_ms.end());
    for (const auto& [status, n] : c.statuses) cell.statuses[status] += n;
  }
  std::sort(cell.post_ms.begin(), cell.post_ms.end());
  return cell;
}

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Prints the row; returns /health's p99.
double Print(const Options& o, const std::string& shape, size_t bytes, const Cell& c) {
  std::string answers;
  for (const auto& [status, n] : c.statuses) {
    if (!answers.empty()) answers += " ";
    answers += std::to_string(n) + "x" + (status == 0 ? "none" : std::to_string(status));
  }
  const double post = hearsay::Percentile(c.post_ms, 0.5);
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  const double p99 = hearsay::Percentile(c.health_ms, 0.99);
  const auto over = std::count_if(c.health_ms.begin(), c.health_ms.end(),
                                  [&](double ms) { return ms > o.bound_ms; });
  const bool posted = !c.post_ms.empty();
  std::printf("| %s | %s | %zu | %s | %s | %s | %zu | %.2f | %.2f | %.2f | %ld | %d |\n",
              o.label.c_str(), shape.c_str(), bytes / 1024, posted ? answers.c_str() : "-",
              posted ? Fixed(post).c_str() : "-", posted ? Fixed(post / mib).c_str() : "-",
              c.health_ms.size(), hearsay::Percentile(c.health_ms, 0.5), p99,
              c.health_ms.empty() ? 0.0 : c.health_ms.back(), static_cast<long>(over),
              c.health_failures);
  std::fflush(stdout);
  return p99;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"POSTs hostile bodies to a running node and measures its /health meanwhile"};
  app.add_option("--node", o.node, "the node's HTTP address, host:port")->required();
  app.add_option("--model", o.model, "the model name in the bodies");
  app.add_option("--seconds", o.seconds, "how long each shape and size is posted")
      ->check(CLI::PositiveNumber);
  app.add_option("--posters", o.posters, "threads posting the body back to back")
      ->check(CLI::Range(1, 64));
  app.add_option("--probe-ms", o.probe_ms, "one /health every this many ms")
      ->check(CLI::Range(1, 10000));
  app.add_option("--bound-ms", o.bound_ms, "the /health latency bound that is counted");
  app.add_option("--sizes", o.sizes, "body sizes in bytes (each shape grown up to each)")
      ->delimiter(',');
  app.add_option("--shapes", o.shapes, "shapes to post (default: all)")->delimiter(',');
  app.add_option("--label", o.label, "the first column of every row");
  app.add_flag("--fail-over-bound", o.fail_over_bound,
               "exit 1 when a /health p99 is over --bound-ms");
  CLI11_PARSE(app, argc, argv);
  for (const std::string& name : o.shapes) {
    if (std::none_of(std::begin(hostile::kShapes), std::end(hostile::kShapes),
                     [&](const hostile::Shape& s) { return name == s.name; })) {
      std::fprintf(stderr, "hearsay_hostile_body: no shape %s\n", name.c_str());
      return 2;
    }
  }

  double worst_p99 = Print(o, "idle", 0, Run(o, nullptr));
  for (const hostile::Shape& shape : hostile::kShapes) {
    if (!o.shapes.empty() &&
        std::find(o.shapes.begin(), o.shapes.end(), shape.name) == o.shapes.end()) {
      continue;
    }
    for (const size_t size : o.sizes) {
      const std::string body = hostile::Body(shape, hostile::LargestFitting(shape, size), o.model);
      worst_p99 = std::max(worst_p99, Print(o, shape.name, body.size(), Run(o, &body)));
    }
  }
  std::fprintf(stderr, "hearsay_hostile_body: worst /health p99 %.2f ms (bound %.0f ms)\n",
               worst_p99, o.bound_ms);
  return o.fail_over_bound && worst_p99 > o.bound_ms ? 1 : 0;
}
