#include "hearsay/route/registry.h"

#include "hearsay/route/dynamo_kv_policy.h"
#include "hearsay/route/hearsay_policy.h"
#include "hearsay/route/least_loaded_policy.h"
#include "hearsay/route/llmd_precise_policy.h"
#include "hearsay/route/local_policy.h"
#include "hearsay/route/oracle_policy.h"
#include "hearsay/route/p2c_policy.h"
#include "hearsay/route/paper_policy.h"
#include "hearsay/route/random_policy.h"
#include "hearsay/route/round_robin_policy.h"
#include "hearsay/route/sgl_cache_aware_policy.h"

namespace hearsay::route {
namespace {

constexpr PolicyInfo kPolicies[] = {
    {"local", "serve where the request enters", false},
    {"random", "a uniformly random live member", false},
    {"round-robin", "live members in turn", false},
    {"least-loaded", "the member with the fewest outstanding requests", false},
    {"p2c", "the less loaded of two random members", false},
    {"paper", "longest estimated prefix match, skipping overloaded members", false},
    {"oracle", "exact global knowledge, lowest expected TTFT (simulator only)", true},
    {"hearsay", "lowest expected time to first token from the gossiped view", false},
    {"sgl-cache-aware",
     "SGLang Model Gateway's cache-aware policy (central router, simulator only)", true, true},
    {"dynamo-kv", "Dynamo's KV router with KV events (central router, simulator only)", true, true},
    {"dynamo-kv-approx",
     "Dynamo's KV router without KV events, predicted cache with a TTL "
     "(central router, simulator only)",
     true, true},
    {"llmd-precise",
     "llm-d's scheduler, precise prefix + KV + queue scorers (central router, "
     "simulator only)",
     true, true},
};

std::unique_ptr<Policy> Build(std::string_view name, const PolicyOptions& options) {
  if (name == "local") return NewLocalPolicy();
  if (name == "random") return NewRandomPolicy(options.decision_seed);
  if (name == "round-robin") return NewRoundRobinPolicy();
  if (name == "least-loaded") return NewLeastLoadedPolicy(options);
  if (name == "p2c") return NewP2cPolicy(options);
  if (name == "paper") return NewPaperPolicy();
  if (name == "oracle") return NewOraclePolicy(options);
  if (name == "hearsay") return std::make_unique<HearsayPolicy>(options);
  if (name == "sgl-cache-aware") return NewSglCacheAwarePolicy(options.peers);
  if (name == "dynamo-kv") return NewDynamoKvPolicy(options.peers, false);
  if (name == "dynamo-kv-approx") return NewDynamoKvPolicy(options.peers, true);
  if (name == "llmd-precise") return NewLlmdPrecisePolicy(options.peers);
  return nullptr;
}

}  // namespace

std::span<const PolicyInfo> Policies() { return kPolicies; }

const PolicyInfo* FindPolicy(std::string_view name) {
  for (const PolicyInfo& p : kPolicies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string PolicyNames() {
  std::string out;
  for (const PolicyInfo& p : kPolicies) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options) {
  const PolicyInfo* info = nullptr;
  for (const PolicyInfo& p : kPolicies) {
    if (p.name == name) info = &p;
  }
  if (info == nullptr) {
    return NotFoundError("unknown routing policy \"" + std::string(name) +
                         "\"; valid policies: " + PolicyNames());
  }
  if (info->simulator_only && options.host == Host::kDaemon) {
    return FailedPreconditionError("routing policy \"" + std::string(name) + "\" " +
                                   (info->central
                                        ? "is a central router's policy (a simulator baseline)"
                                        : "needs exact global knowledge") +
                                   " and runs only in the simulator");
  }
  HEARSAY_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<Policy> policy = Build(name, options);
  HEARSAY_CHECK_MSG(policy != nullptr, "registered policy has no builder");
  return policy;
}

}  // namespace hearsay::route
