#include "hearsay/twin/twin_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "hearsay/engine/cost_model.h"
#include "hearsay/launch/llama_servers.h"
#include "hearsay/node/node.h"

namespace hearsay::twin {

namespace {

const net::SettingInfo* FindSetting(std::string_view flag) {
  for (const net::SettingInfo& s : net::Settings()) {
    if (s.flag == flag) return &s;
  }
  return nullptr;
}

// The settings of `nodes` that shape what the simulator models must agree across the nodes;
// INVALID_ARGUMENT naming the first that does not.
Status CheckAlike(const std::vector<net::DaemonConfig>& nodes) {
  const net::DaemonConfig& first = nodes.front();
  for (size_t i = 1; i < nodes.size(); ++i) {
    const net::DaemonConfig& n = nodes[i];
    const auto differ = [&](const char* what) {
      return InvalidArgumentError(std::string("the twin models alike nodes, but node ") +
                                  std::to_string(i) + "'s " + what + " differs from node 0's");
    };
    if (n.policy != first.policy) return differ("policy");
    if (n.engine != first.engine) return differ("engine");
    if (n.engine_preset != first.engine_preset) return differ("engine preset");
    if (n.capacity_tokens != first.capacity_tokens) return differ("KV capacity");
    if (n.block_size != first.block_size) return differ("block size");
    if (n.model != first.model) return differ("model");
  }
  return OkStatus();
}

Status CheckSimulable(const net::DaemonConfig& node, const std::optional<TwinUpstream>& upstream) {
  if (!node.engines.empty()) {
    return UnimplementedError("the twin does not model [[engine]] entries (several engines)");
  }
  if (node.engine == "sim") return OkStatus();
  if (node.engine != "openai") {
    return UnimplementedError("the twin does not model engine '" + node.engine + "'");
  }
  if (!upstream) {
    return UnimplementedError(
        "the twin models an upstream engine only when told its speed, its tokens per node token "
        "and its slots, which no node configuration says (hearsay demo --engine llama does)");
  }
  if (node.tokenizer != "bytes") {
    // The simulator's requests are sized in the workload's tokens, which the bytes tokenizer
    // counts one for one.
    return UnimplementedError(
        "the twin models nodes that key prompts with the bytes tokenizer, "
        "not '" +
        node.tokenizer + "'");
  }
  if (!std::isfinite(upstream->engine_tokens_per_node_token) ||
      upstream->engine_tokens_per_node_token <= 0) {
    return InvalidArgumentError("the twin's engine tokens per node token must be finite and > 0");
  }
  if (!std::isfinite(upstream->host_cores) || upstream->host_cores < 0) {
    return InvalidArgumentError("the twin's host cores must be finite and >= 0");
  }
  Result<engine::CostModel> cost = engine::CostModel::FromPreset(upstream->cost_model);
  if (!cost.ok())
    return InvalidArgumentError("the twin's upstream engine: " + cost.status().message());
  return OkStatus();
}

Status CheckWorkload(const loadgen::WorkloadSpec& w) {
  HEARSAY_RETURN_IF_ERROR(loadgen::ValidateWorkloadSpec(w));
  if (w.trace_timestamps) {
    return UnimplementedError("the twin replays traces at a Poisson rate, not at their timestamps");
  }
  const loadgen::ApiKind api = w.api.value_or(
      w.workload == "chat" ? loadgen::ApiKind::kChatCompletions : loadgen::ApiKind::kCompletions);
  if (api != loadgen::ApiKind::kCompletions) {
    // A chat template adds tokens the simulator's requests do not have.
    return UnimplementedError(
        "the twin models the completions API only (a chat template adds "
        "tokens the simulator does not see)");
  }
  return OkStatus();
}

}  // namespace

TwinUpstream LlamaDemoUpstream(const std::string& cost_model, double host_cores) {
  TwinUpstream u;
  u.host_cores = host_cores;
  u.cost_model = cost_model.empty() ? kLlamaTwinCostModel : cost_model;
  u.engine_tokens_per_node_token = kLlamaTokensPerNodeToken;
  u.max_running = launch::kLlamaDemoSlots;
  u.slot_cache = true;
  return u;
}

Result<net::DaemonConfig> ParseNodeCommandLine(const std::vector<std::string>& argv) {
  // The `node` word is the one the flags follow (an exec prefix may hold the word too).
  auto node_word = argv.begin();
  for (; node_word != argv.end(); ++node_word) {
    const auto next = node_word + 1;
    if (*node_word == "node" && (next == argv.end() || next->rfind("--", 0) == 0)) break;
  }
  if (node_word == argv.end()) {
    return InvalidArgumentError("not a `hearsay node` command line (no `node` word)");
  }
  std::vector<std::pair<std::string, std::string>> flags;
  std::string config_file;
  for (auto it = node_word + 1; it != argv.end(); ++it) {
    const std::string& arg = *it;
    if (arg.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const net::SettingInfo* s = FindSetting(name);
    const bool is_bool = s != nullptr && s->kind == net::SettingKind::kBool;
    if (!value && !is_bool) {
      if (it + 1 == argv.end()) return InvalidArgumentError("--" + name + " needs a value");
      value = *++it;
    }
    if (name == "config") {
      config_file = *value;
    } else {
      flags.emplace_back(name, value.value_or("true"));
    }
  }
  net::DaemonConfig config;
  if (!config_file.empty()) HEARSAY_RETURN_IF_ERROR(config.LoadTomlFile(config_file));
  for (const auto& [name, value] : flags) HEARSAY_RETURN_IF_ERROR(config.ApplyFlag(name, value));
  return config;
}

Result<std::vector<net::DaemonConfig>> LocalClusterNodeConfigs(
    const launch::LocalClusterOptions& options) {
  std::vector<launch::NodeInfo> infos(options.nodes);
  for (size_t i = 0; i < infos.size(); ++i) {
    infos[i].node_id = "node-" + std::to_string(i);
    infos[i].http_address = "127.0.0.1:" + std::to_string(10000 + 2 * i);
    infos[i].gossip_address = "127.0.0.1:" + std::to_string(10001 + 2 * i);
  }
  std::vector<net::DaemonConfig> out;
  for (size_t i = 0; i < infos.size(); ++i) {
    HEARSAY_ASSIGN_OR_RETURN(net::DaemonConfig c, ParseNodeCommandLine(launch::NodeCommandLine(
                                                      options, infos, "cluster.key", i)));
    out.push_back(std::move(c));
  }
  return out;
}

Result<sim::SimConfig> TwinSimConfig(const std::vector<net::DaemonConfig>& nodes,
                                     const loadgen::WorkloadSpec& workload,
                                     const TwinNetwork& network,
                                     const std::optional<TwinUpstream>& upstream) {
  if (nodes.empty()) return InvalidArgumentError("the twin needs at least one node");
  for (const net::DaemonConfig& n : nodes) HEARSAY_RETURN_IF_ERROR(CheckSimulable(n, upstream));
  HEARSAY_RETURN_IF_ERROR(CheckAlike(nodes));
  HEARSAY_RETURN_IF_ERROR(CheckWorkload(workload));
  if (!std::isfinite(network.one_way_delay_ms) || network.one_way_delay_ms < 0 ||
      !std::isfinite(network.jitter) || network.jitter < 0) {
    return InvalidArgumentError("the twin's network delay and jitter must be finite and >= 0");
  }
  if (nodes.size() != workload.targets) {
    return InvalidArgumentError("the workload spreads over " + std::to_string(workload.targets) +
                                " entry points, the cluster has " + std::to_string(nodes.size()) +
                                " nodes");
  }
  const net::DaemonConfig& node = nodes.front();
  sim::SimConfig c;
  // The cluster, as its nodes are configured.
  c.nodes = static_cast<int>(nodes.size());
  c.policy = node.policy;
  c.engine_preset = node.engine_preset;
  c.capacity_tokens = node.capacity_tokens;
  c.block_tokens = static_cast<uint32_t>(node.block_size);
  if (node.engine == "openai") {
    // An upstream engine, as `upstream` describes it: its cache, configured in its own tokens,
    // holds fewer node tokens when its tokenizer cuts finer.
    c.engine_preset = upstream->cost_model;
    c.capacity_tokens = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::llround(static_cast<double>(node.capacity_tokens) /
                                              upstream->engine_tokens_per_node_token)));
    c.max_running = upstream->max_running;
    c.host_cores = upstream->host_cores;
    if (upstream->slot_cache) c.engine_cache = "slots";
  }
  // The daemon gives forwards a first-token deadline only in front of its own simulated engine.
  c.forward_deadline_factor =
      node.engine == "sim" ? static_cast<double>(node.forward_deadline_factor) : 0;
  // The model the nodes serve: the daemon keys every prompt in its model's cache namespace, whose
  // block heads the chain and takes the first landmark (docs/twin.md).
  c.model = node.model;
  // Gossip: the daemon runs node::NodeOptions' defaults.
  const node::NodeOptions daemon_node;
  c.gossip_ms = ToMillis(daemon_node.gossip.gossip_interval);
  c.landmark_stride = daemon_node.gossip.landmark_stride;
  // A signing node publishes its state once per sign interval: the twin models that.
  c.signatures = node.state_signatures == "off" ? "off" : "modeled";
  // The load, as the load generator sends it.
  c.workload = workload.workload;
  c.trace_path = workload.trace_path;
  c.requests = workload.requests;
  c.rate_per_s = workload.rate_per_s;
  if (workload.workload == "trace") c.arrivals = "poisson";
  c.zipf = workload.zipf;
  c.variants = workload.variants;
  c.cot = workload.cot;
  c.entry = workload.entry == workload::EntryMode::kSticky ? "sticky" : "uniform";
  c.entry_clients = workload.clients;
  c.seed = workload.seed;
  // The network.
  c.delay_ms = network.one_way_delay_ms;
  c.delay_jitter = network.jitter;
  c.loss = 0;
  HEARSAY_RETURN_IF_ERROR(sim::ValidateSimConfig(c));
  return c;
}

std::string SimCommandLine(const sim::SimConfig& c) {
  std::ostringstream out;
  out << "hearsay sim --workload " << c.workload;
  if (!c.trace_path.empty()) out << " --trace " << c.trace_path << " --arrivals " << c.arrivals;
  out << " --nodes " << c.nodes << " --policy " << c.policy << " --engine-preset "
      << c.engine_preset << " --capacity-tokens " << c.capacity_tokens << " --gossip-ms "
      << c.gossip_ms << " --landmark-stride " << c.landmark_stride << " --signatures "
      << c.signatures << " --requests " << c.requests << " --rate " << c.rate_per_s << " --zipf "
      << c.zipf << " --entry " << c.entry << " --clients " << c.entry_clients << " --seed "
      << c.seed << " --delay-ms " << c.delay_ms;
  if (c.max_running != 0) out << " --max-running " << c.max_running;
  if (c.host_cores != 0) out << " --host-cores " << c.host_cores;
  if (c.engine_cache != sim::SimConfig{}.engine_cache) out << " --engine-cache " << c.engine_cache;
  if (c.delay_jitter != sim::SimConfig{}.delay_jitter) out << " --delay-jitter " << c.delay_jitter;
  if (!c.model.empty()) out << " --model " << c.model;
  if (c.cluster_seed != 0) out << " --cluster-seed " << c.cluster_seed;
  if (c.variants != 1) out << " --variants " << c.variants;
  if (c.cot) out << " --cot";
  if (c.forward_deadline_factor != sim::SimConfig{}.forward_deadline_factor) {
    out << " --forward-deadline-factor " << c.forward_deadline_factor;
  }
  return out.str();
}

}  // namespace hearsay::twin
