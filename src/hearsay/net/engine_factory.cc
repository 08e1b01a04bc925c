#include "hearsay/net/engine_factory.h"

#include <chrono>

#include "hearsay/engine/composite_engine.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/engine/sim_engine.h"
#include "hearsay/net/prompt_tokenizer.h"
#include "hearsay/upstream/hosted_openai_engine.h"

namespace hearsay::net {

namespace {

// The one engine a configuration without [[engine]] entries names.
Result<std::unique_ptr<engine::Engine>> MakeOneEngine(const DaemonConfig& config,
                                                      const EngineEnv& env) {
  if (config.engine == "sim") {
    HEARSAY_ASSIGN_OR_RETURN(engine::CostModel cost,
                             engine::CostModel::FromPreset(config.engine_preset));
    engine::SimEngineOptions o;
    o.cost = cost.params();
    o.kv_capacity_tokens = config.capacity_tokens;
    o.max_context_tokens = static_cast<uint32_t>(config.context_tokens);
    o.seed = env.seed;
    HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<engine::SimEngine> e,
                             engine::SimEngine::Create(*env.scheduler, o, *env.keyer));
    return std::unique_ptr<engine::Engine>(std::move(e));
  }
  if (config.engine == "openai") {
    if (env.io == nullptr || !env.post_to_core || !env.deliver_to_core) {
      return InvalidArgumentError("MakeEngine: engine openai needs the I/O context and post hook");
    }
    upstream::OpenAiEngineOptions o;
    HEARSAY_ASSIGN_OR_RETURN(o.flavor, upstream::ParseUpstreamFlavor(config.upstream_flavor));
    o.model = config.upstream_model;
    o.capacity_tokens = config.capacity_tokens;
    o.max_context_tokens = static_cast<uint32_t>(config.context_tokens);
    o.max_in_flight = static_cast<uint32_t>(config.max_concurrent_requests);
    o.slots_authoritative = config.upstream_slots_authoritative;
    o.queue_poll_interval = std::chrono::milliseconds(config.upstream_queue_poll_ms);
    o.price_slot_wait = config.upstream_slot_wait;
    o.prefix_hold_tokens = static_cast<uint32_t>(config.upstream_prefix_hold_tokens);
    o.models_poll_interval = std::chrono::milliseconds(config.upstream_models_poll_ms);
    o.keying = KeyingDescription(config);
    o.first_token_timeout = std::chrono::milliseconds(config.upstream_first_token_timeout_ms);
    o.answer_timeout = std::chrono::milliseconds(config.upstream_answer_timeout_ms);
    // The preset the node prices this engine with: speed samples are taken against its shape.
    HEARSAY_ASSIGN_OR_RETURN(const engine::CostModel preset,
                             engine::CostModel::FromPreset(config.engine_preset));
    o.prefill_model = preset.params();
    HEARSAY_ASSIGN_OR_RETURN(
        std::unique_ptr<upstream::HostedOpenAiEngine> e,
        upstream::MakeHostedOpenAiEngine(*env.scheduler, *env.io, env.deliver_to_core, *env.keyer,
                                         config.upstream, std::move(o), env.io_one_thread));
    if (!config.kv_events.empty()) {
      // vLLM's KV-cache events: the fourth source of cache knowledge (docs/engines.md).
      upstream::KvEventsSubscriberOptions ko;
      ko.endpoint = config.kv_events;
      ko.replay_endpoint = config.kv_events_replay;
      ko.topic = config.kv_events_topic;
      HEARSAY_RETURN_IF_ERROR(e->StartKvEvents(std::move(ko), env.post_to_core, *env.keyer));
    }
    return std::unique_ptr<engine::Engine>(std::move(e));
  }
  return InvalidArgumentError("engine.kind: unknown engine '" + config.engine +
                              "'; valid: sim, openai");
}

}  // namespace

Result<std::unique_ptr<engine::Engine>> MakeEngine(const DaemonConfig& config, EngineEnv env) {
  if (env.scheduler == nullptr || env.keyer == nullptr) {
    return InvalidArgumentError("MakeEngine: no scheduler or keyer");
  }
  if (config.engines.empty()) return MakeOneEngine(config, env);
  std::vector<engine::CompositeEngine::Child> children;
  for (size_t i = 0; i < config.engines.size(); ++i) {
    HEARSAY_ASSIGN_OR_RETURN(DaemonConfig one, config.EngineConfig(i));
    EngineEnv child_env = env;
    child_env.seed = env.seed + i;  // each simulated engine its own jitter
    Result<std::unique_ptr<engine::Engine>> e = MakeOneEngine(one, child_env);
    if (!e.ok()) {
      return Status(e.status().code(), "engine[" + std::to_string(i) + "] (model " + one.model +
                                           "): " + e.status().message());
    }
    children.push_back({std::move(*e), {one.model}});
  }
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<engine::CompositeEngine> composite,
                           engine::CompositeEngine::Create(std::move(children)));
  return std::unique_ptr<engine::Engine>(std::move(composite));
}

}  // namespace hearsay::net
