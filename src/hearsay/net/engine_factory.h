// The engine seam of the daemon: one function that turns the configuration into the engine the
// node runs: `sim` (the embedded simulated engine, in real time on the core's scheduler) or
// `openai` (an OpenAI-compatible server, using the I/O context and the post-to-core hook of
// EngineEnv), or several of them behind one engine::CompositeEngine ([[engine]] entries).
//
// Thread-safety: called once on the daemon's setup thread, before the core thread runs; the
// engine it returns lives on the core thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/net/daemon_config.h"
#include "hearsay/prefix/block_keys.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace hearsay::net {

// What an engine may use. Everything is borrowed and outlives the engine.
struct EngineEnv {
  Scheduler* scheduler = nullptr;             // the core's
  const prefix::BlockKeyer* keyer = nullptr;  // the node's namespace (cache events use its keys)
  uint64_t seed = 1;                          // for the engine's own randomness (sim jitter)
  boost::asio::io_context* io = nullptr;      // the I/O context (network engines)
  bool io_one_thread = false;                 // exactly one thread runs *io
  // Queues a task on the core thread.
  std::function<void(std::function<void()>)> post_to_core;
  // Runs a task on the core thread: at once when called there, else queued. For the events of the
  // engine's HTTP client, which never calls back inside a call into it.
  std::function<void(std::function<void()>)> deliver_to_core;
};

// The engine `config.engine` names, or with [[engine]] entries an engine::CompositeEngine of one
// engine per entry (child i is entry i, serving its model until the daemon learns what the
// engine lists). INVALID_ARGUMENT for an unknown engine or bad options.
Result<std::unique_ptr<engine::Engine>> MakeEngine(const DaemonConfig& config, EngineEnv env);

}  // namespace hearsay::net
