// PolicyOptions: everything a policy is built from, filled by the node (or the simulator) and
// handed to MakePolicy() in registry.h. Policies copy what they need; nothing is borrowed.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/route/cost_model.h"

namespace hearsay::route {

// Where a policy runs. Simulator-only policies (the oracle) refuse to be built for the daemon.
enum class Host : uint8_t { kSimulator, kDaemon };

// Tuning of the `hearsay` policy (see hearsay_policy.h for how each one is used).
// HearsayParams::busy_wait_ms's hardware: ms of prefill per token (the h100-llama3-8b preset).
inline constexpr double kBusyWaitReferenceMsPerToken = 0.03;

struct HearsayParams {
  // Costs within max(near_tie_fraction × best, near_tie_ms) of the best are a near-tie.
  double near_tie_fraction = 0.05;
  double near_tie_ms = 0.5;
  // A near-tie goes to the prompt's home among the tied members: the one ranked first by a
  // rendezvous hash of its name with the prompt's block key at this depth (or the last key of a
  // shorter prompt). Entry nodes agree on it without talking, so when their views cannot tell
  // members apart (as traffic starts, every view says idle and empty; a new prefix) they send
  // one prefix to one member, as a central router's index would, instead of each to its own.
  // 0 = no home: the entry node serves a tie it is part of, else draws among the tied peers.
  uint32_t home_key_depth = 4;
  // How fast a reported queue wait is assumed to drain while the report ages and the request
  // travels, as a fraction of elapsed time: 1 = the member works it off and nobody else adds
  // to it; 0 = steady state (others refill it as fast as it drains). The true figure is 1 minus
  // the member's utilization. Shared with `oracle`, whose exact view still ages in flight.
  double reported_wait_drain = 1.0;
  // How long a member's reported queue wait stays informative: a report aged t (plus the trip)
  // is blended into that member's long-run mean reported wait with weight exp(-t / queue_memory).
  // A queue forgets its state within a few service times, so a report a gossip round old says
  // little about now, and the mean (not zero, which draining alone tends to) is the best guess.
  Duration queue_memory = FromMillis(50);
  // ... or longer for a long queue: a queue turns over in about its own wait, so a report of a
  // wait W stays informative for max(queue_memory, queue_memory_per_wait × W). (On the Mooncake
  // trace, queues of seconds were otherwise forgotten within 50 ms and long prompts went to
  // members that had reported seconds of queue.)
  double queue_memory_per_wait = 1.0;
  // EWMA weight of one new load report in a member's long-run mean reported wait.
  double wait_mean_weight = 0.1;
  // Fixed cost of a forward on top of 2 × one-way delay (proxying, connection reuse), in ms.
  double forward_overhead_ms = 0.1;
  // How long a lease on a dispatched prompt lasts: a few gossip intervals.
  Duration lease_ttl = FromMillis(1000);
  // How much of a leased prefix is trusted to be cached at the leased member.
  double lease_confidence = 0.9;
  // Lease table size, log2 entries (a 512-block prompt takes 57).
  int lease_capacity_log2 = 14;
  // A holder whose expected queue wait exceeds this loses cache credit, in proportion: a busy
  // LRU cache is likely to evict the prefix before the request reaches the front. In ms on the
  // reference hardware, kBusyWaitReferenceMsPerToken of prefill per token (an H100 serving
  // Llama-3-8B): the cache turns over with the tokens computed, so a member whose prefill costs
  // k times as much per token keeps a prefix k times as long (the cost model's cost per token
  // times the member's Candidate::cost_scale, over the reference's).
  double busy_wait_ms = 250;
  // Under load, a miss costs more than its own wait: the prefill it adds is work that later
  // requests queue behind. Each candidate's price adds work_weight × pressure × (its prefill −
  // the cheapest prefill any candidate offers), pressure being the share of candidates with a
  // queue (LoadView::queued > 0: requests not admitted yet for the simulated engine, requests
  // without their first token for an upstream one, which cannot see admission) or with requests
  // this node sent since their report. 0 = price only this request's time to first token.
  double work_weight = 1.0;
  // ... and where members share a host's processors (Candidate::host_group), the prefill a miss
  // adds there takes the cores every host-mate's prefill needs, now or in the next moments, queue
  // or none: a candidate whose group has another member among the candidates is priced with the
  // larger of work_weight × pressure and shared_host_work_weight. 0 = the group changes nothing.
  // In the simulator configured like the llama demo, 3 took hearsay's worst hit rate from 0.905 to
  // 0.954 × paper's (docs/engines.md).
  double shared_host_work_weight = 3.0;
  // A prefill shares the engine's iterations with the requests running there: each of them
  // waits for it before its next token. Each candidate's price adds interference_weight ×
  // running(c) × prefill(c), so a long prefill goes where it holds up the fewest decoders.
  // 0 = price only this request's time to first token. At 0.2 it sent the Mooncake trace's longest
  // prompts behind queues of seconds to spare a few decoders (docs/peers.md: p99 TTFT up to 1.4×
  // Dynamo's KV router); 0.1 keeps the trace's mean end to end below the oracle's.
  double interference_weight = 0.1;
  // Cache credit from a view of this age is halved (gossip staleness).
  Duration stale_half_life = FromMillis(5000);
  // Learning rate of the per-member confidence in cache estimates (EWMA weight of one outcome).
  double learning_rate = 0.2;
  // Where a peer's cache is first assumed to end between what its landmarks prove
  // (Candidate::cached_tokens, 0) and what they allow (Candidate::cached_tokens_max, 1), before
  // outcomes teach the policy where it really ends.
  double initial_fill = 0.5;
  // Confidence never drops below this, so a member can earn back trust.
  double min_confidence = 0.1;
};

// Tuning of the peers' central routers, simulator baselines (docs/peers.md cites the source of
// every default).
struct PeerParams {
  // sgl-cache-aware: the SGLang Model Gateway's documented defaults.
  // Route to the best-matching worker only when matched / prompt tokens exceeds this.
  double sgl_cache_threshold = 0.3;
  // Load is imbalanced when max - min in-flight requests > abs AND max > rel × min.
  uint32_t sgl_balance_abs_threshold = 64;
  double sgl_balance_rel_threshold = 1.5;
  // The approximate tree's LRU eviction runs this often and trims every worker's share of the
  // tree to sgl_max_tree_tokens (the gateway counts characters; we count tokens, ~4 chars each).
  Duration sgl_eviction_interval = FromMillis(120000);
  uint64_t sgl_max_tree_tokens = (uint64_t{1} << 26) / 4;
  // dynamo-kv: Dynamo's KvRouterConfig defaults.
  // logit = overlap_score_weight × prefill blocks + decode blocks; lower is better.
  double dynamo_overlap_score_weight = 1.0;
  // 0 = the lowest logit (ties at random); > 0 = softmax sampling of the normalized logits.
  double dynamo_temperature = 0.0;
  // dynamo-kv-approx: a block predicted by a routing decision is trusted this long.
  Duration dynamo_approx_ttl = FromMillis(120000);
  // llmd-precise: scorer weights of llm-d's precise-prefix-cache-aware guide.
  double llmd_prefix_weight = 3.0;
  double llmd_kv_utilization_weight = 2.0;
  double llmd_queue_weight = 2.0;
};

struct PolicyOptions {
  Host host = Host::kSimulator;
  // The engine cost model, in ms (see cost_model.h).
  PrefillCostModel cost;
  // Sends older than this are assumed served, however stale a member's load report.
  Duration sent_horizon = FromMillis(2000);
  HearsayParams hearsay;
  PeerParams peers;
  // When set, a policy that draws random numbers (`random`) draws them from its own generator
  // seeded with this, not from the Rng passed to Choose(). The daemon sets it: its Rng also serves
  // gossip timers, so only an own stream makes routing choices repeatable from the node's seed.
  std::optional<uint64_t> decision_seed;

  // OK, or INVALID_ARGUMENT naming the first bad field.
  Status Validate() const;
};

}  // namespace hearsay::route
