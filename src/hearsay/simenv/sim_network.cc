#include "hearsay/simenv/sim_network.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "hearsay/common/check.h"
#include "hearsay/simenv/sim_hash.h"

namespace hearsay::simenv {
namespace {

constexpr uint64_t kDropTag = 0xd20bd20bd20bd20bULL;

bool IsProbability(double p) { return p >= 0 && p <= 1; }  // false for NaN

int64_t SerializationNanos(size_t bytes, double bytes_per_sec) {
  if (bytes_per_sec <= 0 || bytes == 0) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 1e9 / bytes_per_sec));
}

int64_t SaturatingAdd(int64_t a, int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; }

}  // namespace

Duration LatencyModel::Sample(Rng& rng) const {
  const double base_ns = static_cast<double>(base.count());
  const double spread_ns = static_cast<double>(spread.count());
  double ns = base_ns;
  switch (kind) {
    case Kind::kFixed:
      break;
    case Kind::kUniform:
      if (spread_ns > 0) ns = base_ns + spread_ns * rng.UniformDouble();
      break;
    case Kind::kNormal:
      if (spread_ns > 0) ns = rng.Normal(base_ns, spread_ns);
      break;
    case Kind::kLogNormal:
      if (spread_ns > 0) ns = base_ns + spread_ns * rng.LogNormal(0, sigma);
      break;
  }
  // Clamp below at zero and above at a year, so a wild tail cannot overflow the clock.
  ns = std::clamp(ns, 0.0, 3.15e16);
  return Duration(static_cast<int64_t>(ns));
}

Status LatencyModel::Validate() const {
  if (base < Duration::zero()) return InvalidArgumentError("latency base must be >= 0");
  if (spread < Duration::zero()) return InvalidArgumentError("latency spread must be >= 0");
  if (!(sigma >= 0 && sigma <= 10)) return InvalidArgumentError("latency sigma must be in [0, 10]");
  return OkStatus();
}

Status LinkFaults::Validate() const {
  HEARSAY_RETURN_IF_ERROR(latency.Validate());
  if (!IsProbability(loss)) return InvalidArgumentError("loss must be in [0, 1]");
  if (!IsProbability(duplicate)) return InvalidArgumentError("duplicate must be in [0, 1]");
  if (!IsProbability(reorder)) return InvalidArgumentError("reorder must be in [0, 1]");
  if (reorder_window < Duration::zero()) {
    return InvalidArgumentError("reorder_window must be >= 0");
  }
  if (!(bandwidth_bytes_per_sec >= 0) || std::isinf(bandwidth_bytes_per_sec)) {
    return InvalidArgumentError("bandwidth_bytes_per_sec must be finite and >= 0");
  }
  return OkStatus();
}

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kLoss:
      return "loss";
    case DropReason::kPartition:
      return "partition";
    case DropReason::kOversize:
      return "oversize";
    case DropReason::kDown:
      return "down";
  }
  return "unknown";
}

uint64_t NodeCounters::dropped_total() const {
  uint64_t total = 0;
  for (uint64_t d : dropped) total += d;
  return total;
}

NodeCounters& NodeCounters::operator+=(const NodeCounters& o) {
  messages_sent += o.messages_sent;
  bytes_sent += o.bytes_sent;
  messages_received += o.messages_received;
  bytes_received += o.bytes_received;
  duplicated += o.duplicated;
  for (size_t i = 0; i < kNumDropReasons; ++i) dropped[i] += o.dropped[i];
  return *this;
}

class SimNetwork::SimEndpoint final : public Transport {
 public:
  SimEndpoint(SimNetwork* net, uint32_t index) : net_(net), index_(index) {}
  void Send(const Address& to, Channel channel, std::vector<uint8_t> payload) override {
    net_->Send(index_, to, channel, std::move(payload));
  }
  size_t MaxDatagramBytes() const override { return net_->max_datagram_bytes(); }

 private:
  SimNetwork* net_;
  uint32_t index_;
};

struct SimNetwork::Node {
  Address address;
  uint64_t address_hash = 0;
  MessageSink* sink = nullptr;
  bool up = false;
  bool ever_attached = false;
  // Bumped on every crash; in-flight copies remember it at both ends.
  uint32_t incarnation = 0;
  int64_t egress_free_at = 0;
  double egress_bytes_per_sec = -1;  // < 0: the network default
  NodeCounters counters;
  std::vector<Link> out;  // by destination index; grown on demand
  std::unique_ptr<SimEndpoint> endpoint;
};

SimNetwork::SimNetwork(VirtualScheduler& scheduler, Options options)
    : scheduler_(scheduler),
      options_(std::move(options)),
      rng_(options_.seed),
      group_(scheduler.NewGroup()) {
  HEARSAY_CHECK_MSG(options_.defaults.Validate().ok(), "invalid default LinkFaults");
  HEARSAY_CHECK_MSG(options_.egress_bytes_per_sec >= 0, "egress_bytes_per_sec must be >= 0");
}

SimNetwork::~SimNetwork() { scheduler_.CancelGroup(group_); }

uint32_t SimNetwork::IndexOf(const Address& address) {
  auto [it, inserted] = by_address_.try_emplace(address, static_cast<uint32_t>(nodes_.size()));
  if (inserted) {
    auto node = std::make_unique<Node>();
    node->address = address;
    node->address_hash = HashBytes(address);
    node->endpoint = std::make_unique<SimEndpoint>(this, it->second);
    nodes_.push_back(std::move(node));
  }
  return it->second;
}

const SimNetwork::Node* SimNetwork::Find(const Address& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? nullptr : nodes_[it->second].get();
}

SimNetwork::Link& SimNetwork::LinkOf(uint32_t from, uint32_t to) {
  std::vector<Link>& out = nodes_[from]->out;
  if (out.size() <= to) out.resize(nodes_.size());
  return out[to];
}

Result<Transport*> SimNetwork::Attach(const Address& address, MessageSink* sink) {
  if (sink == nullptr) return InvalidArgumentError("Attach: null sink for " + address);
  if (const Node* n = Find(address); n != nullptr && n->up) {
    return AlreadyExistsError("Attach: " + address + " is already attached");
  }
  Node& node = *nodes_[IndexOf(address)];
  node.sink = sink;
  node.up = true;
  node.ever_attached = true;
  return static_cast<Transport*>(node.endpoint.get());
}

Status SimNetwork::Crash(const Address& address) {
  auto it = by_address_.find(address);
  if (it == by_address_.end() || !nodes_[it->second]->ever_attached) {
    return NotFoundError("Crash: unknown node " + address);
  }
  Node& node = *nodes_[it->second];
  if (!node.up) return FailedPreconditionError("Crash: " + address + " is already down");
  node.up = false;
  node.sink = nullptr;
  ++node.incarnation;
  // Its queues die with it: a restarted node starts with idle links.
  const int64_t now = scheduler_.Now().time_since_epoch().count();
  node.egress_free_at = now;
  for (Link& link : node.out) {
    link.free_at = now;
    link.last_arrival = now;
  }
  // Copies in flight to it will be dropped, so they must not hold back the next incarnation's.
  for (auto& other : nodes_) {
    if (it->second < other->out.size()) {
      Link& in = other->out[it->second];
      in.last_arrival = std::min(in.last_arrival, now);
    }
  }
  return OkStatus();
}

Result<Transport*> SimNetwork::Restart(const Address& address, MessageSink* sink) {
  const Node* n = Find(address);
  if (n == nullptr || !n->ever_attached) return NotFoundError("Restart: unknown node " + address);
  if (n->up) return FailedPreconditionError("Restart: " + address + " is up");
  return Attach(address, sink);
}

Transport* SimNetwork::Endpoint(const Address& address) {
  auto it = by_address_.find(address);
  if (it == by_address_.end() || !nodes_[it->second]->ever_attached) return nullptr;
  return nodes_[it->second]->endpoint.get();
}

bool SimNetwork::IsUp(const Address& address) const {
  const Node* n = Find(address);
  return n != nullptr && n->up;
}

Status SimNetwork::SetDefaultFaults(const LinkFaults& faults) {
  HEARSAY_RETURN_IF_ERROR(faults.Validate());
  options_.defaults = faults;
  return OkStatus();
}

Status SimNetwork::SetLinkFaults(const Address& from, const Address& to, const LinkFaults& faults) {
  HEARSAY_RETURN_IF_ERROR(faults.Validate());
  const uint32_t f = IndexOf(from);
  const uint32_t t = IndexOf(to);
  LinkOf(f, t).faults = std::make_unique<LinkFaults>(faults);
  return OkStatus();
}

void SimNetwork::ClearLinkFaults(const Address& from, const Address& to) {
  auto f = by_address_.find(from);
  auto t = by_address_.find(to);
  if (f == by_address_.end() || t == by_address_.end()) return;
  std::vector<Link>& out = nodes_[f->second]->out;
  if (t->second < out.size()) out[t->second].faults.reset();
}

void SimNetwork::ClearAllLinkFaults() {
  for (auto& node : nodes_) {
    for (Link& link : node->out) link.faults.reset();
  }
}

Status SimNetwork::SetEgressBandwidth(const Address& node, double bytes_per_sec) {
  if (!(bytes_per_sec >= 0) || std::isinf(bytes_per_sec)) {
    return InvalidArgumentError("egress bandwidth must be finite and >= 0");
  }
  nodes_[IndexOf(node)]->egress_bytes_per_sec = bytes_per_sec;
  return OkStatus();
}

void SimNetwork::BlockLink(const Address& from, const Address& to) {
  const uint32_t f = IndexOf(from);
  const uint32_t t = IndexOf(to);
  LinkOf(f, t).blocked = true;
}

void SimNetwork::BlockPair(const Address& a, const Address& b) {
  BlockLink(a, b);
  BlockLink(b, a);
}

void SimNetwork::Partition(const std::vector<std::vector<Address>>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    for (size_t j = 0; j < groups.size(); ++j) {
      if (i == j) continue;
      for (const Address& a : groups[i]) {
        for (const Address& b : groups[j]) BlockLink(a, b);
      }
    }
  }
}

void SimNetwork::HealLink(const Address& from, const Address& to) {
  auto f = by_address_.find(from);
  auto t = by_address_.find(to);
  if (f == by_address_.end() || t == by_address_.end()) return;
  std::vector<Link>& out = nodes_[f->second]->out;
  if (t->second < out.size()) out[t->second].blocked = false;
}

void SimNetwork::HealPair(const Address& a, const Address& b) {
  HealLink(a, b);
  HealLink(b, a);
}

void SimNetwork::HealAll() {
  for (auto& node : nodes_) {
    for (Link& link : node->out) link.blocked = false;
  }
}

bool SimNetwork::IsBlocked(const Address& from, const Address& to) const {
  auto f = by_address_.find(from);
  auto t = by_address_.find(to);
  if (f == by_address_.end() || t == by_address_.end()) return false;
  const std::vector<Link>& out = nodes_[f->second]->out;
  return t->second < out.size() && out[t->second].blocked;
}

NodeCounters SimNetwork::Counters(const Address& address) const {
  const Node* n = Find(address);
  return n == nullptr ? NodeCounters{} : n->counters;
}

NodeCounters SimNetwork::TotalCounters() const {
  NodeCounters total;
  for (const auto& node : nodes_) total += node->counters;
  return total;
}

void SimNetwork::Drop(uint32_t from, uint64_t to_hash, DropReason reason) {
  ++nodes_[from]->counters.dropped[static_cast<size_t>(reason)];
  uint64_t h =
      FoldHash(kDropTag, static_cast<uint64_t>(scheduler_.Now().time_since_epoch().count()));
  h = FoldHash(h, nodes_[from]->address_hash);
  h = FoldHash(h, to_hash ^ static_cast<uint64_t>(reason));
  scheduler_.FoldTrace(h);
}

void SimNetwork::Send(uint32_t from, const Address& to_address, Channel channel,
                      std::vector<uint8_t> payload) {
  Node& src = *nodes_[from];
  auto it = by_address_.find(to_address);
  if (!src.up) {
    Drop(from, it == by_address_.end() ? HashBytes(to_address) : nodes_[it->second]->address_hash,
         DropReason::kDown);
    return;
  }
  const size_t size = payload.size();
  ++src.counters.messages_sent;
  src.counters.bytes_sent += size;
  if (it == by_address_.end() || !nodes_[it->second]->up) {
    Drop(from, it == by_address_.end() ? HashBytes(to_address) : nodes_[it->second]->address_hash,
         DropReason::kDown);
    return;
  }
  const uint32_t to = it->second;
  const uint64_t to_hash = nodes_[to]->address_hash;
  if (channel == Channel::kDatagram && size > options_.max_datagram_bytes) {
    Drop(from, to_hash, DropReason::kOversize);
    return;
  }
  Link& link = LinkOf(from, to);
  if (link.blocked) {
    Drop(from, to_hash, DropReason::kPartition);
    return;
  }
  const LinkFaults& faults = link.faults ? *link.faults : options_.defaults;

  const int64_t now = scheduler_.Now().time_since_epoch().count();
  int64_t depart = now;
  const double egress =
      src.egress_bytes_per_sec >= 0 ? src.egress_bytes_per_sec : options_.egress_bytes_per_sec;
  if (egress > 0) {
    depart = SaturatingAdd(std::max(depart, src.egress_free_at), SerializationNanos(size, egress));
    src.egress_free_at = depart;
  }
  if (faults.bandwidth_bytes_per_sec > 0) {
    depart = SaturatingAdd(std::max(depart, link.free_at),
                           SerializationNanos(size, faults.bandwidth_bytes_per_sec));
    link.free_at = depart;
  }

  if (rng_.Bernoulli(faults.loss)) {
    Drop(from, to_hash, DropReason::kLoss);
    return;
  }
  const bool duplicate = rng_.Bernoulli(faults.duplicate);
  for (int copy = 0; copy < (duplicate ? 2 : 1); ++copy) {
    int64_t arrival = SaturatingAdd(depart, faults.latency.Sample(rng_).count());
    if (faults.reorder > 0) {
      if (rng_.Bernoulli(faults.reorder) && faults.reorder_window > Duration::zero()) {
        arrival = SaturatingAdd(
            arrival, static_cast<int64_t>(rng_.UniformDouble() *
                                          static_cast<double>(faults.reorder_window.count())));
      }
    } else {
      arrival = std::max(arrival, link.last_arrival);
      link.last_arrival = arrival;
    }
    if (copy == 0) {
      Enqueue(from, to, channel, arrival, duplicate ? payload : std::move(payload));
    } else {
      ++src.counters.duplicated;
      Enqueue(from, to, channel, arrival, std::move(payload));
    }
  }
}

void SimNetwork::Enqueue(uint32_t from, uint32_t to, Channel channel, int64_t arrival,
                         std::vector<uint8_t> payload) {
  uint32_t slot;
  if (free_head_ != UINT32_MAX) {
    slot = free_head_;
    free_head_ = in_flight_[slot].next_free;
  } else {
    HEARSAY_CHECK(in_flight_.size() < UINT32_MAX);
    slot = static_cast<uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  }
  InFlight& f = in_flight_[slot];
  f.payload = std::move(payload);
  f.from = from;
  f.to = to;
  f.from_incarnation = nodes_[from]->incarnation;
  f.to_incarnation = nodes_[to]->incarnation;
  f.channel = channel;
  ++in_flight_count_;
  const int64_t now = scheduler_.Now().time_since_epoch().count();
  scheduler_.RunAfterInGroup(group_, Duration(arrival - now), [this, slot] { Deliver(slot); });
}

void SimNetwork::Deliver(uint32_t slot) {
  InFlight& f = in_flight_[slot];
  const std::vector<uint8_t> payload = std::move(f.payload);
  f.payload.clear();
  const uint32_t from = f.from;
  const uint32_t to = f.to;
  const Channel channel = f.channel;
  const bool stale = nodes_[from]->incarnation != f.from_incarnation ||
                     nodes_[to]->incarnation != f.to_incarnation;
  f.next_free = free_head_;
  free_head_ = slot;
  --in_flight_count_;

  Node& dst = *nodes_[to];
  if (stale || !dst.up) {
    Drop(from, dst.address_hash, DropReason::kDown);
    return;
  }
  ++dst.counters.messages_received;
  dst.counters.bytes_received += payload.size();
  const Node& src = *nodes_[from];
  uint64_t h = FoldHash(src.address_hash, dst.address_hash);
  h = FoldHash(h, static_cast<uint64_t>(scheduler_.Now().time_since_epoch().count()));
  h = FoldHash(h, static_cast<uint64_t>(channel));
  h = FoldHash(h, HashBytes(payload));
  scheduler_.FoldTrace(h);
  // The sink may send, attach or crash nodes; nothing above is touched after this call.
  dst.sink->OnMessage(src.address, channel, payload);
}

}  // namespace hearsay::simenv
