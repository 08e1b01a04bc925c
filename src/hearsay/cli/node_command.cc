// `hearsay node`: runs one node daemon (net::Daemon) until SIGTERM or SIGINT.
//
// Every DaemonConfig setting is a flag (--http, --join, ...; see docs/operations.md), and
// --config FILE loads a TOML file first, so flags override it. Once both sockets are bound it
// prints one line to stdout, which scripts and tests read for the actual ports:
//   listening http=127.0.0.1:40123 gossip=127.0.0.1:40124 node=host:40124 generation=...
// (then ` admin=HOST:PORT` with --admin-http).
// Logs go to stderr. The first SIGTERM/SIGINT drains (leave the cluster, finish in-flight
// requests up to --drain-timeout-ms) and exits 0; a second one exits at once with status 130.
// Exit status 2: bad configuration or key file; 1: the node could not start (a port in use).
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/cli/commands.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_config.h"

namespace hearsay::cli {

namespace {

struct NodeFlags {
  std::string config_file;
  std::vector<std::string> values;  // one per net::Settings() entry
  std::unique_ptr<bool[]> bools;
};

// Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread it starts, so sigwait gets
// them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int RunNode(CLI::App& cmd, const NodeFlags& flags) {
  net::DaemonConfig config;
  if (!flags.config_file.empty()) {
    if (Status s = config.LoadTomlFile(flags.config_file); !s.ok()) {
      std::fprintf(stderr, "hearsay node: %s\n", s.message().c_str());
      return 2;
    }
  }
  const auto settings = net::Settings();
  for (size_t i = 0; i < settings.size(); ++i) {
    const std::string flag = "--" + std::string(settings[i].flag);
    if (cmd.count(flag) == 0) continue;
    const std::string value = settings[i].kind == net::SettingKind::kBool
                                  ? (flags.bools[i] ? "true" : "false")
                                  : flags.values[i];
    if (Status s = config.ApplyFlag(settings[i].flag, value); !s.ok()) {
      std::fprintf(stderr, "hearsay node: %s\n", s.message().c_str());
      return 2;
    }
  }
  if (Status s = config.Validate(); !s.ok()) {
    std::fprintf(stderr, "hearsay node: %s\n", s.message().c_str());
    return 2;
  }

  auto logger = spdlog::stderr_color_mt("hearsay");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  const sigset_t stop_signals = BlockStopSignals();
  Result<std::unique_ptr<net::Daemon>> daemon = net::Daemon::Create(config);
  if (!daemon.ok()) {
    std::fprintf(stderr, "hearsay node: %s\n", daemon.status().message().c_str());
    const StatusCode c = daemon.status().code();
    return c == StatusCode::kInvalidArgument || c == StatusCode::kFailedPrecondition ||
                   c == StatusCode::kNotFound || c == StatusCode::kPermissionDenied
               ? 2
               : 1;
  }
  const std::string admin =
      (*daemon)->admin_address().empty() ? "" : " admin=" + (*daemon)->admin_address();
  std::printf("listening http=%s gossip=%s node=%s generation=%llu%s\n",
              (*daemon)->http_address().c_str(), (*daemon)->gossip_address().c_str(),
              (*daemon)->node_id().c_str(),
              static_cast<unsigned long long>((*daemon)->generation()), admin.c_str());
  std::fflush(stdout);

  int sig = 0;
  // SIGHUP reloads the API-keys file and the TLS certificate; SIGINT and SIGTERM drain.
  while (sigwait(&stop_signals, &sig) == 0 && sig == SIGHUP) {
    (*daemon)->ReloadApiKeys();
    (*daemon)->ReloadTls();
  }
  spdlog::info("event=signal signal={} msg=\"draining; send it again to exit at once\"",
               sig == SIGTERM ? "SIGTERM" : "SIGINT");
  std::thread([stop_signals] {
    int again = 0;
    while (sigwait(&stop_signals, &again) == 0 && again == SIGHUP) {
    }
    std::fprintf(stderr, "hearsay node: second signal, exiting at once\n");
    std::_Exit(130);
  }).detach();
  (*daemon)->Shutdown();
  daemon->reset();
  return 0;
}

}  // namespace

void AddNodeCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "node",
      "Run a hearsay node: an OpenAI-compatible API that routes to the peer most "
      "likely to hold the prompt's prefix (see docs/operations.md)");
  auto flags = std::make_shared<NodeFlags>();
  const auto settings = net::Settings();
  flags->values.resize(settings.size());
  flags->bools = std::make_unique<bool[]>(settings.size());
  cmd->add_option("--config", flags->config_file, "TOML configuration file (flags override it)");
  for (size_t i = 0; i < settings.size(); ++i) {
    const net::SettingInfo& s = settings[i];
    const std::string name = "--" + std::string(s.flag);
    const std::string help = std::string(s.help) + " [" + std::string(s.key) + "]";
    if (s.kind == net::SettingKind::kBool) {
      flags->bools[i] = false;
      cmd->add_flag(name, flags->bools[i], help);
    } else {
      cmd->add_option(name, flags->values[i], help);
    }
  }
  cmd->callback([cmd, flags, &exit_code] { exit_code = RunNode(*cmd, *flags); });
}

}  // namespace hearsay::cli
