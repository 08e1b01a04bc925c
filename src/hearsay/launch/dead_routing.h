// DeadRoutingChecker: the chaos invariant "no request is routed to a member that every other node
// has declared dead for longer than a grace period". It is fed samples of the nodes' views (GET
// /cluster of every node that answered) and routings (a request entering at one node, routed to
// or served by a member, at a known time or within a known window), and reports the routings that
// went to a member while every other answering node had listed it dead or left for longer than
// the grace period. A node routing a request to itself is never counted (it does not see itself
// dead).
//
// Times are milliseconds on one clock shared by the samples and the routings: the test bed uses
// the steady clock, which is also the daemon's clock in its decision records (`arrived_ms`).
//
// The checker is conservative: a span "dead for all" runs from the end of the first sample in
// which every other answering node lists the member dead (or left) to the start of the last such
// sample in a row, so sampling never makes a legitimate routing look like a violation.
//
// Thread-safety: not thread-safe; one owner feeds it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/launch/cluster_view.h"

namespace hearsay::launch {

// A request entering at `entry`, routed to (or served by) `member` at some time within
// [earliest_ms, latest_ms]; `what` says where it was seen, for the report.
struct Routing {
  std::string entry;
  std::string member;
  double earliest_ms = 0;
  double latest_ms = 0;
  std::string what;
};

// A time span during which every other answering node listed `member` dead or left.
struct DeadSpan {
  std::string member;
  double from_ms = 0;
  double to_ms = 0;
};

class DeadRoutingChecker {
 public:
  explicit DeadRoutingChecker(double grace_ms) : grace_ms_(grace_ms) {}

  // One sample of the views of the nodes that answered, fetched between begin_ms and end_ms.
  void AddSample(double begin_ms, double end_ms, const std::vector<ClusterView>& views);
  void AddRouting(Routing routing) { routings_.push_back(std::move(routing)); }

  // Every span so far (an open one ends at its last sample).
  std::vector<DeadSpan> Spans() const;
  // The routings that violate the invariant, one line each.
  std::vector<std::string> Violations() const;
  size_t routings() const { return routings_.size(); }
  size_t samples() const { return samples_; }
  double grace_ms() const { return grace_ms_; }

 private:
  struct Open {
    double from_ms = 0;
    double to_ms = 0;
  };

  double grace_ms_;
  size_t samples_ = 0;
  std::map<std::string, Open> open_;  // members dead for all in the latest sample
  std::vector<DeadSpan> closed_;
  std::vector<Routing> routings_;
};

// The routings in one line of a node's --records file (node/decision_record.h): for a "route"
// record, one per routing attempt, to the attempt's chosen member at arrived_ms + at_ms; none for
// other kinds. INVALID_ARGUMENT if the line is not such a record.
Result<std::vector<Routing>> RoutingsOfRecordLine(std::string_view line);

}  // namespace hearsay::launch
