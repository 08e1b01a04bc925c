// NodeService: what a `hearsay node` tells the pool it serves (gossip::Service), built from its
// configuration and from what its engine lists on GET /v1/models (upstream/served_models.h).
//
// One engine entry per model:
//   - the configured model (node.model, the canonical name requests use), with the configured
//     aliases (node.model_aliases) and, when the upstream lists models, the first one's name as
//     another alias (the name the engine itself answers to) and its LoRA adapters;
//   - each further model the upstream lists, under its own name, when no engine.upstream_model
//     rewrites every request to one name (otherwise the node could not reach them).
// The kind is "sim" or the upstream flavor ("llamacpp", "vllm", "sglang", "openai" for generic).
// The context length is limits.context_tokens, or the engine's own when it reports a smaller one.
// The block size is node.block_size, and the tokenizer fingerprint is a hash of how the node
// cuts prompts into tokens (TokenizerFingerprint): two nodes agree on a model's block keys only
// if both agree, and the core never routes a model between nodes that disagree.
// Names that break the service limits (gossip/service.h) are left out and counted, so the rest
// is still served.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/gossip/service.h"
#include "hearsay/net/daemon_config.h"
#include "hearsay/upstream/served_models.h"

namespace hearsay::net {

// A hash of the node's tokenizer: the built-in `bytes` tokenizer and chat template, or the
// engine's tokenizer for `engine_model` (tokenizer = engine).
uint64_t TokenizerFingerprint(const DaemonConfig& config, std::string_view engine_model);

struct NodeServiceResult {
  gossip::Service service;
  size_t names_left_out = 0;  // aliases, adapters or models beyond the service limits
};

// The service of a node configured by `config` whose engine lists `served` (nullopt: not read
// yet, or the simulated engine).
NodeServiceResult BuildNodeService(const DaemonConfig& config,
                                   const std::optional<upstream::ServedModels>& served);

// The service of a node fronting several engines ([[engine]] entries): engine i is configured by
// configs[i] (DaemonConfig::EngineConfigs) and lists served[i] (same size). Each engine's part is
// BuildNodeService of its own; a model an earlier engine already advertises is not repeated (a
// replica), and engines past gossip::kMaxServiceEngines are left out and counted. `models`, if
// not null, gets for each engine the canonical models it serves, for engine::CompositeEngine.
NodeServiceResult BuildNodeService(std::span<const DaemonConfig> configs,
                                   std::span<const std::optional<upstream::ServedModels>> served,
                                   std::vector<std::vector<std::string>>* models);

}  // namespace hearsay::net
