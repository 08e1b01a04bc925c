// LlamaServers: N llama.cpp `llama-server` processes on loopback, each serving the small
// random-weight model that scripts/setup-llama.sh builds, for the real-engine end-to-end test and
// `hearsay demo --engine llama`.
//
// EnsureLlamaSetup() runs scripts/setup-llama.sh (idempotent; the first run builds llama.cpp into
// ${HEARSAY_CACHE:-~/.cache/hearsay}/llama/, which takes minutes). Start() spawns the servers on
// free ports with fresh (empty) caches and waits, bounded, until each /health answers 200.
//
// Ownership: owns its processes; the destructor SIGKILLs and reaps them.
// Thread-safety: one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/launch/child_process.h"

namespace hearsay::launch {

// The llama cache dir: ${HEARSAY_CACHE:-$HOME/.cache/hearsay}/llama.
std::string LlamaCacheDir();

// Runs `setup_script` --model-tool `model_tool`, its output going to stderr. OK when the build and
// model are ready; FAILED_PRECONDITION when llama.cpp cannot be built on this machine (a tool is
// missing: the script's exit code 3); INTERNAL for any other failure.
Status EnsureLlamaSetup(const std::string& setup_script, const std::string& model_tool);

struct LlamaServerOptions {
  size_t servers = 3;
  // The model, a file in the cache's models dir that setup-llama.sh generates: hearsay-tiny.gguf
  // or the second, smaller hearsay-tiny-b.gguf.
  std::string model_file = "hearsay-tiny.gguf";
  // The name the servers give their model (--alias; on /v1/models and in answers). Empty: the
  // name llama-server derives, which is the same for both generated models.
  std::string alias;
  // Parallel slots per server (-np); each keeps its last prompt's KV.
  int slots = 4;
  // Context per slot, tokens.
  int context_per_slot = 8192;
  // Host-memory prompt cache, MiB (--cache-ram); 0 = the slots are the whole cache.
  int cache_ram_mib = 64;
  int threads = 1;
  // Publish /metrics (--metrics), where the node reads the server's own queue.
  bool metrics = true;
  // Where the logs go (<log_prefix><i>.log).
  std::string log_dir;
  std::string log_prefix = "llama-";
  std::chrono::milliseconds ready_timeout{120000};
};

// `hearsay demo --engine llama`: one llama-server per node, each with kLlamaDemoSlots slots and a
// kLlamaDemoCacheRamMib prompt cache, which holds kLlamaDemoCapacityTokens tokens of the small
// model (4 KiB of KV per token). The digital twin (twin/) models these servers from the same
// constants.
inline constexpr int kLlamaDemoSlots = 4;
inline constexpr int kLlamaDemoCacheRamMib = 64;
inline constexpr uint64_t kLlamaDemoCapacityTokens = 16384;
// The cost model the demo's nodes price these servers with (engine/cost_model.cc fits it to
// llama-server's own prefill times): the shape of a prefill (the attention to a long cached
// prefix) that each node's measured speed then scales.
inline constexpr char kLlamaDemoEnginePreset[] = "llama-tiny-cpu";

// The llama demo's servers for `servers` nodes, logging to `log_dir`.
LlamaServerOptions LlamaDemoServerOptions(size_t servers, const std::string& log_dir);

struct LocalClusterOptions;
// Sets `o` up as the llama demo's nodes: engine openai in front of llama.cpp (flavor llamacpp),
// priced with kLlamaDemoEnginePreset, the servers' cache as each node's capacity (in llama
// tokens), and deadlines that fit a CPU engine's real speed (a peer's first token may take tens of
// seconds on a loaded machine: the forward deadline sits above the engine's own, so a slow peer is
// waited for rather than abandoned mid-prefill and the request recomputed elsewhere), and one host
// group for all (they share this machine's cores). Each node's --upstream is for the caller to add
// once its server runs.
void SetUpLlamaDemoNodes(LocalClusterOptions& o);

class LlamaServers {
 public:
  static Result<std::unique_ptr<LlamaServers>> Start(const LlamaServerOptions& options);
  ~LlamaServers() = default;
  LlamaServers(const LlamaServers&) = delete;
  LlamaServers& operator=(const LlamaServers&) = delete;

  // "127.0.0.1:<port>" of each server.
  const std::vector<std::string>& addresses() const { return addresses_; }

 private:
  LlamaServers() = default;
  std::vector<std::unique_ptr<ChildProcess>> procs_;
  std::vector<std::string> addresses_;
};

}  // namespace hearsay::launch
