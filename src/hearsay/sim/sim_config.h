// SimConfig: every knob of one simulator run (`hearsay sim`), and its validation.
//
// A SimConfig is a plain value: the CLI fills it from flags, the experiment runner builds many of
// them for a sweep, and RunSim (sim_run.h) turns one into a SimSummary. Defaults describe the
// paper's baseline: MMLU-like traffic on 4 nodes at 70% of cluster capacity.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "hearsay/common/status.h"

namespace hearsay::sim {

struct SimConfig {
  // Request generator: "mmlu", "trace" (needs trace_path) or "chat".
  std::string workload = "mmlu";
  // Mooncake-format JSONL trace for workload "trace".
  std::string trace_path;
  // Cluster size, >= 1.
  int nodes = 4;
  // Routing policy, by registry name (route/registry.h).
  std::string policy = "hearsay";
  // One-way network delay between any two nodes, in ms (>= 0).
  double delay_ms = 1.0;
  // Relative jitter of the one-way delay (uniform in [d, d * (1 + jitter)]); >= 0.
  double delay_jitter = 0.1;
  // Zipf exponent of prefix popularity (MMLU subjects, chat system prompts); >= 0.
  double zipf = 0.68;
  // Target utilization: arrival rate = rho x estimated cluster capacity (sim_run.h). > 0.
  // Ignored for "trace" unless arrivals is "poisson" or "bursty".
  double rho = 0.7;
  // Arrival rate over the whole cluster, requests per virtual second; when > 0 it replaces rho
  // (as `hearsay demo --rate` sets it for real processes).
  double rate_per_s = 0;
  // Requests to simulate (for "trace": at most this many of the trace; 0 = all of it). For
  // "chat", conversations are started until about this many requests are issued.
  uint64_t requests = 20000;
  // KV cache capacity of each engine, in tokens.
  uint64_t capacity_tokens = 65536;
  // Gossip (anti-entropy) interval, in ms (> 0). The SWIM probe interval is 5x this, at least
  // 100 ms.
  double gossip_ms = 200;
  // Seeds the workload (prompts, arrivals, entry nodes) and, unless cluster_seed is set, the
  // cluster (network jitter and loss, every node's randomness: gossip peers, routing ties).
  uint64_t seed = 1;
  // Seeds the cluster alone; 0 = seed. Runs that differ only here see the same requests.
  uint64_t cluster_seed = 0;
  // Engine cost model preset (engine/cost_model.h).
  std::string engine_preset = "h100-llama3-8b";
  // Most requests each engine runs at once (vLLM's max_num_seqs, llama-server's -np slots);
  // 0 keeps the engine's default.
  uint32_t max_running = 0;
  // Cores of the one host every engine runs on (CPU engines, such as the llama demo's
  // llama-servers): while k engines run an iteration, each runs at min(1, cores / k) of its speed
  // (engine/shared_host.h). 0: every engine has a machine of its own.
  double host_cores = 0;
  // How much prefills on that host slow each other beyond sharing its cores
  // (engine::SharedHost): 0.3 is about the llama demo's host. Needs host_cores.
  double host_contention = 0;
  // How each engine keeps its KV cache: "paged" (vLLM, SGLang: one radix tree) or "slots"
  // (llama.cpp's llama-server: max_running slots, each keeping its last sequence, and a host cache
  // of capacity_tokens keeping whole sequences; engine/slot_cache.h).
  std::string engine_cache = "paged";

  // --- Extras ---
  // MMLU chain-of-thought outputs (150-300 tokens) instead of a 1-token answer.
  bool cot = false;
  // MMLU prefix variants per subject, >= 1.
  uint32_t variants = 1;
  // "poisson", "bursty" (Gamma gaps with burst_cv) or "trace" (the trace's own timestamps; only
  // for workload "trace"). Empty: the workload's default ("trace" for traces, else "poisson").
  std::string arrivals;
  double burst_cv = 3.0;
  // How a request picks its entry node: "uniform" or "sticky" (per client).
  std::string entry = "uniform";
  // Distinct clients the entry nodes are drawn for; 0 = max(64, 16 x nodes). (The load generator
  // draws from 64 by default: its digital twin sets this, so both issue the same requests.)
  uint32_t entry_clients = 0;
  // Probability that a network message is lost, in [0, 1).
  double loss = 0;
  // Gossip landmark stride (blocks), >= 1.
  uint32_t landmark_stride = 16;
  // Signed origin state (gossip::SignatureMode by name): "off", "modeled" (the signatures' bytes
  // and their once-a-second publication, no real crypto) or "ed25519". The daemon signs by
  // default, so the twin runs "modeled".
  std::string signatures = "off";
  // Tokens per block of the block key chain, >= 1.
  uint32_t block_tokens = 16;
  // Virtual time to warm up membership before the first request, in ms (>= 0).
  double warmup_ms = 3000;
  // Where the policy runs: 0 = on every node (hearsay's deployment: each request enters at a
  // node, which routes it); k >= 1 = in k router replicas in front of the nodes, behind a load
  // balancer (central_router.h); -1 = 1 for the peers' central policies (route::PolicyInfo::
  // central), else 0.
  int routers = -1;
  // With routers > 1: the replicas share decisions and request lifecycles (Dynamo's replica sync).
  bool replica_sync = false;
  // Keep one RequestRecord per request in SimSummary::records (sim_run.h), for analyses that
  // need to know who served what when (specialist drift, load over time).
  bool record_requests = false;

  // --- A pool of unequal machines (sim/cluster_spec.h) ---
  // PRESET:COUNT[:MODEL+MODEL...],...; empty = `nodes` nodes of `engine_preset` serving one
  // model. When set it replaces nodes and engine_preset, and every node prices each member by
  // its measured prefill speed (node::NodeOptions::price_by_measured_prefill), its own preset
  // being only the starting point.
  std::string cluster;
  // Without `cluster`: the name of the one model every node serves, as a daemon names the model
  // it serves (net::DaemonConfig::model). Empty: an unnamed model, whose prompts are keyed without
  // a namespace. Named, every request asks for it, and the nodes key its prompts in the model's
  // cache namespace (node::ModelNamespace) as the daemon does: every key chains from the
  // namespace's header block (prefix/block_keys.h), which is never gossiped.
  std::string model;
  // Zipf exponent of model popularity when the cluster names several models (the first named
  // the most popular); >= 0.
  double model_zipf = 1.0;

  // --- A fault: one engine slows down ---
  // The node whose engine slows (-1 = none), from slow_at_s virtual seconds after the first
  // arrival, to 1 / slow_factor of its speed (every iteration takes slow_factor times longer).
  int slow_node = -1;
  double slow_at_s = 0;
  double slow_factor = 2;

  // --- A fault: members that lie (node::Misbehaviour) ---
  // Nodes 0 .. liars - 1 advertise every block any peer advertises and an idle engine, and never
  // bounce a forward, while they serve what they get normally. 0 = none; < nodes.
  int liars = 0;
  // The next `slanderers` nodes are honest about themselves but list every peer as holding an
  // hour of work they never sent (node::Misbehaviour::slander). liars + slanderers < nodes.
  int slanderers = 0;
  // At a member a node has no reason of its own to doubt, how many of the largest listers'
  // shares count only up to the next largest (node::SharedBacklogOptions::trimmed_listers);
  // 0 = believe every list in full.
  int trimmed_listers = 1;
  // Entry nodes discount members whose answers do not match their claims (node/peer_trust.h);
  // false = believe every claim (an ablation).
  bool trust = true;
  // A forward is given up and served elsewhere when its first token is later than this many
  // times the policy's expected time to first token (at least 1 s): the daemon's
  // limits.forward_deadline_factor. 0 = no deadline, as the daemon in front of upstream engines.
  double forward_deadline_factor = 4;
};

// OK, or INVALID_ARGUMENT naming the first bad field and its allowed range.
Status ValidateSimConfig(const SimConfig& config);

// The router replicas a run uses (SimConfig::routers with -1 resolved); 0 = policy on the nodes.
int EffectiveRouters(const SimConfig& config);

}  // namespace hearsay::sim
