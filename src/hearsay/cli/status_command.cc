// `hearsay status [--node URL] [--watch] [--json]`: the cluster as one node sees it, in a
// terminal. It reads the node's GET /status (docs/reference.md#get-status) and, for the per-node
// columns of the other members, each alive member's own /status at its API address (skipped
// when unreachable; a member with an admin listener serves none there). --node may be https://,
// with --tls-ca or --tls-insecure. --json prints the node's /status as it came; --watch redraws
// every
// --interval seconds until interrupted.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "hearsay/cli/client_tls.h"
#include "hearsay/cli/commands.h"
#include "hearsay/cli/interrupt_watcher.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/launch/status_view.h"
#include "hearsay/loadgen/target_url.h"

namespace hearsay::cli {
namespace {

struct StatusFlags {
  std::string node = "http://127.0.0.1:8080";
  bool watch = false;
  bool json = false;
  double interval_s = 2;
  ClientTlsFlags tls;
};

Result<nlohmann::json> FetchStatus(const std::string& address, Duration timeout,
                                   const std::shared_ptr<http::TlsContext>& tls) {
  HEARSAY_ASSIGN_OR_RETURN(http::SyncResponse r, http::GetSync(address, "/status", timeout, tls));
  if (r.status != 200) {
    return UnavailableError("GET /status answered HTTP " + std::to_string(r.status));
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("members")) {
    return DataLossError("GET /status did not answer the status JSON");
  }
  return j;
}

// One rendering; false (after printing why) when the node could not be read.
bool ShowOnce(const StatusFlags& f, const std::string& address,
              const std::shared_ptr<http::TlsContext>& tls) {
  Result<nlohmann::json> s = FetchStatus(address, std::chrono::seconds(5), tls);
  if (!s.ok()) {
    std::fprintf(stderr, "hearsay status: %s: %s\n", f.node.c_str(), s.status().ToString().c_str());
    return false;
  }
  if (f.json) {
    std::printf("%s\n", s->dump(2).c_str());
    return true;
  }
  std::map<std::string, nlohmann::json> peers;
  for (const nlohmann::json& m : (*s)["members"]) {
    if (m.value("self", false) || m.value("state", "") != "alive") continue;
    const std::string api = m.value("api_address", "");
    if (api.empty()) continue;
    Result<nlohmann::json> p = FetchStatus(api, std::chrono::seconds(1), tls);
    if (p.ok()) peers[m.value("id", "")] = std::move(*p);
  }
  std::string table = launch::RenderStatusTable(*s, peers);
  if (f.watch && isatty(STDOUT_FILENO)) std::printf("\033[H\033[2J");
  std::printf("%s", table.c_str());
  std::fflush(stdout);
  return true;
}

int RunStatus(const StatusFlags& f) {
  Result<loadgen::TargetUrl> url = loadgen::ParseTargetUrl(f.node);
  if (!url.ok()) {
    std::fprintf(stderr, "hearsay status: --node: %s\n", url.status().message().c_str());
    return 2;
  }
  Result<std::shared_ptr<http::TlsContext>> tls = ClientTls(f.tls, url->https);
  if (!tls.ok()) {
    std::fprintf(stderr, "hearsay status: %s\n", tls.status().message().c_str());
    return 2;
  }
  const std::string* address = &url->host_port;
  if (!f.watch) return ShowOnce(f, *address, *tls) ? 0 : 1;
  std::atomic<bool> stop{false};
  InterruptWatcher watcher([&stop](int) { stop = true; });
  while (!stop) {
    ShowOnce(f, *address, *tls);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(f.interval_s * 1000));
    while (!stop && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return 0;
}

}  // namespace

void AddStatusCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<StatusFlags>();
  auto* cmd = app.add_subcommand(
      "status", "Show the cluster as one node sees it: members, load, hit rate, TTFT, forwards");
  cmd->add_option("--node", f->node,
                  "The node's URL (http:// or https://; its admin listener if it has one)")
      ->capture_default_str();
  AddClientTlsOptions(cmd, f->tls);
  cmd->add_flag("--watch", f->watch, "Redraw every --interval seconds until interrupted");
  cmd->add_option("--interval", f->interval_s, "Seconds between redraws with --watch")
      ->check(CLI::Range(0.2, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print the node's GET /status JSON (docs/reference.md)");
  cmd->callback([f, &exit_code] { exit_code = RunStatus(*f); });
}

}  // namespace hearsay::cli
