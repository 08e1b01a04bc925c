// The policy registry: every routing policy, built by name. The simulator and the daemon both
// build their policies here, so a name means the same code everywhere.
//
// Thread-safety: the functions are pure; the list is immutable.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

struct PolicyInfo {
  std::string_view name;
  // One line for --help and docs.
  std::string_view summary;
  // Needs inputs only the simulator has (exact global state); the daemon must refuse it.
  bool simulator_only = false;
  // A central router's policy (a peer baseline): the simulator runs it in router entities that
  // see every request, never on the nodes.
  bool central = false;
};

// The registered policy called `name`, or nullptr.
const PolicyInfo* FindPolicy(std::string_view name);

// Every registered policy, in a fixed order.
std::span<const PolicyInfo> Policies();

// The registered names, comma-separated ("local, random, ..."), for messages and --help.
std::string PolicyNames();

// The policy called `name`, or NOT_FOUND listing the valid names. INVALID_ARGUMENT if `options`
// are invalid; FAILED_PRECONDITION if the policy is simulator-only and options.host is kDaemon.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options);

}  // namespace hearsay::route
