// SimNetwork: the simulator's network. Nodes attach by Address with a MessageSink and send
// through a Transport endpoint; every message becomes a delivery event on the shared
// VirtualScheduler, shaped by faults drawn from the network's own seeded Rng.
//
// Fault model (all settable and healable at any time; each applies to messages sent after the
// change, never retroactively to messages already in flight):
//  - Links are directed (from -> to). Each has the network's default LinkFaults unless
//    SetLinkFaults gave it an override.
//  - Send-time checks, in order; a failed check drops the message, counted against the sender:
//      sender down             -> kDown (a crashed node's leftover code may still call Send)
//      receiver unknown/down   -> kDown
//      kDatagram larger than max_datagram_bytes() -> kOversize (kStream has no size limit)
//      link blocked by a partition -> kPartition
//  - Bandwidth: serialization delay, with a FIFO queue, at the sender's egress (a per-node limit)
//    and then on the link (a per-link limit); bytes/s, 0 = unlimited. A message leaves after the
//    ones queued before it, so a large message delays later ones behind it. Lost messages still
//    use bandwidth (they were sent), blocked or oversize ones do not.
//  - Loss: with probability `loss` the message vanishes on the wire (kLoss).
//  - Latency: each delivered copy draws its propagation delay from the link's LatencyModel.
//  - Duplication: with probability `duplicate` a second copy is delivered, with its own latency.
//  - Reordering: with reorder == 0 every link is FIFO: a copy never arrives before one sent
//    earlier on the same link, whatever the latency jitter (the model is a queue, not a set of
//    independent paths). With reorder > 0, FIFO is not enforced and each copy is, with probability
//    `reorder`, held back an extra uniform [0, reorder_window), so later messages may overtake it.
//  - Partitions: BlockLink is one-way, BlockPair symmetric, Partition({g1, g2, ...}) blocks every
//    link between different groups. HealLink / HealPair / HealAll undo them. Checked at send.
//  - Crash: the node stops receiving and sending; messages in flight to it or from it are
//    dropped at arrival (kDown), even if it restarted meanwhile (a new incarnation has new
//    connections). Its egress queue is emptied. Its timers are the host's business (cancel its
//    ScopedScheduler). Restart attaches again with a fresh sink; counters carry on.
// Every delivery folds (time, from, to, channel, payload hash) into the scheduler's trace hash,
// and every drop folds (time, from, to, reason), so equal seeds give equal traces.
//
// Ownership: the network owns its endpoints (valid until it is destroyed) and in-flight payloads;
// it does not own sinks, which must stay valid while their node is attached. The scheduler must
// outlive the network; deliveries are a timer group of their own, cancelled when the network is
// destroyed.
// Thread-safety: none; everything runs on the scheduler's thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/env/transport.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::simenv {

// A propagation delay distribution. Samples are never negative.
struct LatencyModel {
  enum class Kind : uint8_t { kFixed, kUniform, kNormal, kLogNormal };

  Kind kind = Kind::kFixed;
  // kFixed: the delay. kUniform: the lower bound. kNormal: the mean. kLogNormal: the floor.
  Duration base = std::chrono::milliseconds(1);
  // kUniform: the width (upper bound - lower). kNormal: the standard deviation. kLogNormal: the
  // median of the jitter added to the floor.
  Duration spread = Duration::zero();
  // kLogNormal: the standard deviation of log(jitter); larger means a heavier tail.
  double sigma = 0.5;

  static LatencyModel Fixed(Duration d) { return {Kind::kFixed, d, Duration::zero(), 0}; }
  // Uniform in [lo, hi).
  static LatencyModel Uniform(Duration lo, Duration hi) { return {Kind::kUniform, lo, hi - lo, 0}; }
  // Normal, truncated at zero.
  static LatencyModel Normal(Duration mean, Duration stddev) {
    return {Kind::kNormal, mean, stddev, 0};
  }
  // floor + LogNormal jitter whose median is `median_jitter`.
  static LatencyModel LogNormal(Duration floor, Duration median_jitter, double sigma) {
    return {Kind::kLogNormal, floor, median_jitter, sigma};
  }

  // One delay drawn from `rng`.
  Duration Sample(Rng& rng) const;
  // OK, or INVALID_ARGUMENT if a field is negative or the uniform range is reversed.
  Status Validate() const;
};

// The faults of one directed link (or the network default).
struct LinkFaults {
  LatencyModel latency;
  double loss = 0;       // in [0, 1]
  double duplicate = 0;  // in [0, 1]
  double reorder = 0;    // in [0, 1]; 0 keeps the link FIFO
  Duration reorder_window = std::chrono::milliseconds(0);
  double bandwidth_bytes_per_sec = 0;  // per-link serialization limit; 0 = unlimited

  // OK, or INVALID_ARGUMENT naming the first field out of range.
  Status Validate() const;
};

enum class DropReason : uint8_t { kLoss = 0, kPartition, kOversize, kDown };
inline constexpr size_t kNumDropReasons = 4;
// "loss", "partition", "oversize", "down".
std::string_view DropReasonName(DropReason reason);

// Per-node traffic counters. Drops are counted against the sending node.
struct NodeCounters {
  uint64_t messages_sent = 0;  // Send calls while up (including ones dropped later)
  uint64_t bytes_sent = 0;
  uint64_t messages_received = 0;  // deliveries to this node's sink (duplicates included)
  uint64_t bytes_received = 0;
  uint64_t duplicated = 0;  // extra copies the network made of this node's messages
  std::array<uint64_t, kNumDropReasons> dropped{};

  uint64_t dropped_by(DropReason r) const { return dropped[static_cast<size_t>(r)]; }
  uint64_t dropped_total() const;
  NodeCounters& operator+=(const NodeCounters& other);
};

class SimNetwork {
 public:
  struct Options {
    uint64_t seed = 1;
    LinkFaults defaults;
    size_t max_datagram_bytes = 1400;
    double egress_bytes_per_sec = 0;  // default per-node egress limit; 0 = unlimited
  };

  // `scheduler` must outlive the network. Options are validated by the setters below; invalid
  // default faults in `options` are a programming error (checked).
  SimNetwork(VirtualScheduler& scheduler, Options options);
  ~SimNetwork();

  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  // Attaches `address` (new, or crashed earlier: a restart) with `sink`, and returns its
  // Transport, valid for the network's lifetime (the same object across restarts).
  // INVALID_ARGUMENT for a null sink, ALREADY_EXISTS if the address is attached and up.
  Result<Transport*> Attach(const Address& address, MessageSink* sink);
  // Crashes `address`: see the fault model. NOT_FOUND if unknown, FAILED_PRECONDITION if down.
  Status Crash(const Address& address);
  // Attach after a Crash; FAILED_PRECONDITION if the node is up, NOT_FOUND if never attached.
  Result<Transport*> Restart(const Address& address, MessageSink* sink);
  // The node's Transport, or nullptr if the address was never attached.
  Transport* Endpoint(const Address& address);
  // True if attached and not crashed.
  bool IsUp(const Address& address) const;

  // Faults. Changes apply to messages sent afterwards.
  Status SetDefaultFaults(const LinkFaults& faults);
  const LinkFaults& default_faults() const { return options_.defaults; }
  // Overrides the default for the directed link from -> to.
  Status SetLinkFaults(const Address& from, const Address& to, const LinkFaults& faults);
  // Returns the link from -> to to the default.
  void ClearLinkFaults(const Address& from, const Address& to);
  void ClearAllLinkFaults();
  // The sender-side egress limit of one node (bytes/s, 0 = unlimited), overriding the default.
  Status SetEgressBandwidth(const Address& node, double bytes_per_sec);
  void set_max_datagram_bytes(size_t n) { options_.max_datagram_bytes = n; }
  size_t max_datagram_bytes() const { return options_.max_datagram_bytes; }

  // Partitions. Addresses not yet attached are remembered, so a partition can precede a join.
  void BlockLink(const Address& from, const Address& to);
  void BlockPair(const Address& a, const Address& b);
  // Blocks every link between nodes of different groups (both ways). Nodes in no group, and
  // links inside a group, are left as they are.
  void Partition(const std::vector<std::vector<Address>>& groups);
  void HealLink(const Address& from, const Address& to);
  void HealPair(const Address& a, const Address& b);
  void HealAll();
  bool IsBlocked(const Address& from, const Address& to) const;

  // Counters of one node (zeros if unknown), and the sum over all nodes.
  NodeCounters Counters(const Address& address) const;
  NodeCounters TotalCounters() const;
  // Message copies scheduled for delivery and not yet arrived.
  size_t in_flight() const { return in_flight_count_; }
  VirtualScheduler& scheduler() const { return scheduler_; }

 private:
  class SimEndpoint;
  struct Link {
    std::unique_ptr<LinkFaults> faults;  // null: the default
    int64_t free_at = 0;                 // when the link's serialization queue empties
    int64_t last_arrival = 0;            // FIFO floor for the next copy
    bool blocked = false;
  };
  struct Node;
  // A copy on the wire. Free ones are chained through `next_free`.
  struct InFlight {
    std::vector<uint8_t> payload;
    uint32_t from = 0;
    uint32_t to = 0;
    uint32_t from_incarnation = 0;
    uint32_t to_incarnation = 0;
    uint32_t next_free = 0;
    Channel channel = Channel::kDatagram;
  };

  uint32_t IndexOf(const Address& address);  // creates a down node if unknown
  const Node* Find(const Address& address) const;
  Link& LinkOf(uint32_t from, uint32_t to);
  void Send(uint32_t from, const Address& to, Channel channel, std::vector<uint8_t> payload);
  void Drop(uint32_t from, uint64_t to_hash, DropReason reason);
  void Enqueue(uint32_t from, uint32_t to, Channel channel, int64_t arrival,
               std::vector<uint8_t> payload);
  void Deliver(uint32_t slot);

  VirtualScheduler& scheduler_;
  Options options_;
  Rng rng_;
  TimerGroup group_;
  // Invariants:
  //  - nodes_[i]->index == i; by_address_ maps each node's address to its index.
  //  - in_flight_count_ == slots of in_flight_ in use == pending delivery events of this network.
  //  - a node that is up has a non-null sink.
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<Address, uint32_t> by_address_;
  std::vector<InFlight> in_flight_;
  uint32_t free_head_ = UINT32_MAX;
  size_t in_flight_count_ = 0;
};

}  // namespace hearsay::simenv
