// LlamaServers: see llama_servers.h.
#include "hearsay/launch/llama_servers.h"

#include <sys/wait.h>

#include <cstdlib>
#include <thread>

#include "hearsay/http/sync_call.h"
#include "hearsay/launch/local_cluster.h"

namespace hearsay::launch {

using namespace std::chrono_literals;

std::string LlamaCacheDir() {
  const char* cache = std::getenv("HEARSAY_CACHE");
  const char* home = std::getenv("HOME");
  const std::string root =
      cache != nullptr ? cache : std::string(home != nullptr ? home : "/tmp") + "/.cache/hearsay";
  return root + "/llama";
}

Status EnsureLlamaSetup(const std::string& setup_script, const std::string& model_tool) {
  // Single quotes: the paths come from our own build, but may contain spaces.
  const std::string cmd = "'" + setup_script + "' --model-tool '" + model_tool + "' 1>&2";
  const int rc = std::system(cmd.c_str());
  const int code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (code == 0) return OkStatus();
  if (code == 3) {
    return FailedPreconditionError(
        "llama.cpp cannot be built on this machine: setup-llama.sh found a tool missing (npm, "
        "git or cmake); see its output");
  }
  return InternalError("scripts/setup-llama.sh failed (exit " + std::to_string(code) +
                       "); logs in " + LlamaCacheDir());
}

LlamaServerOptions LlamaDemoServerOptions(size_t servers, const std::string& log_dir) {
  LlamaServerOptions o;
  o.servers = servers;
  o.slots = kLlamaDemoSlots;
  o.cache_ram_mib = kLlamaDemoCacheRamMib;
  o.log_dir = log_dir;
  return o;
}

void SetUpLlamaDemoNodes(LocalClusterOptions& o) {
  o.capacity_tokens = kLlamaDemoCapacityTokens;
  o.engine = "openai";
  o.engine_preset = kLlamaDemoEnginePreset;
  o.extra_flags.insert(o.extra_flags.end(),
                       {"--upstream-flavor", "llamacpp", "--upstream-first-token-timeout-ms",
                        "120000", "--forward-timeout-ms", "150000"});
  // The servers share this machine's cores: one host group (gossip::Service::host_group).
  o.extra_flags.insert(o.extra_flags.end(), {"--host-group", "llama-demo"});
}

Result<std::unique_ptr<LlamaServers>> LlamaServers::Start(const LlamaServerOptions& o) {
  if (o.servers == 0 || o.slots < 1 || o.context_per_slot < 64 || o.threads < 1 ||
      o.cache_ram_mib < 0 || o.log_dir.empty() || o.model_file.empty()) {
    return InvalidArgumentError("LlamaServers: bad options");
  }
  const std::string dir = LlamaCacheDir();
  auto out = std::unique_ptr<LlamaServers>(new LlamaServers());
  HEARSAY_ASSIGN_OR_RETURN(std::vector<uint16_t> ports,
                           PickFreeLoopbackPorts(o.servers, /*udp_too=*/false));
  auto log = [&](size_t i) { return o.log_dir + "/" + o.log_prefix + std::to_string(i) + ".log"; };
  for (size_t i = 0; i < o.servers; ++i) {
    // Each flag beside its value.
    // clang-format off
    std::vector<std::string> argv = {dir + "/bin/llama-server",
                                     "-m", dir + "/models/" + o.model_file,
                                     "--host", "127.0.0.1",
                                     "--port", std::to_string(ports[i]),
                                     "-c", std::to_string(o.slots * o.context_per_slot),
                                     "-np", std::to_string(o.slots),
                                     "-t", std::to_string(o.threads),
                                     "-tb", std::to_string(o.threads),
                                     "--cache-ram", std::to_string(o.cache_ram_mib),
                                     "--slots",
                                     "--no-webui",
                                     // llama2c-converted models record a 128-token training
                                     // context; the random weights do not care, so lift it.
                                     "--override-kv",
                                     "llama.context_length=int:" +
                                         std::to_string(o.context_per_slot)};
    // clang-format on
    if (!o.alias.empty()) argv.insert(argv.end(), {"--alias", o.alias});
    if (o.metrics) argv.push_back("--metrics");
    HEARSAY_ASSIGN_OR_RETURN(auto p, ChildProcess::Spawn(argv, log(i)));
    out->procs_.push_back(std::move(p));
    out->addresses_.push_back("127.0.0.1:" + std::to_string(ports[i]));
  }
  const auto deadline = std::chrono::steady_clock::now() + o.ready_timeout;
  for (size_t i = 0; i < o.servers; ++i) {
    while (true) {
      if (!out->procs_[i]->running()) {
        return UnavailableError("llama-server " + std::to_string(i) + " exited (" +
                                out->procs_[i]->ExitDescription() + "):\n" + TailFile(log(i), 20));
      }
      Result<http::SyncResponse> r = http::GetSync(out->addresses_[i], "/health", 2000ms);
      if (r.ok() && r.value().status == 200) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return DeadlineExceededError("llama-server " + std::to_string(i) +
                                     " not healthy in time:\n" + TailFile(log(i), 20));
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  return out;
}

}  // namespace hearsay::launch
