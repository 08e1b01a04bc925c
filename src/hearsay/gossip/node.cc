#include "hearsay/gossip/node.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "hearsay/gossip/node_internal.h"

namespace hearsay::gossip {

using node_internal::HashId;

std::string_view MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kAlive:
      return "alive";
    case MemberState::kSuspect:
      return "suspect";
    case MemberState::kDead:
      return "dead";
    case MemberState::kLeft:
      return "left";
  }
  return "unknown";
}

Node::Node(NodeId id, Generation generation, Address self, Config config, Scheduler& scheduler,
           Rng& rng, Transport& transport, Framer* framer, Listener* listener,
           SharedHistories* shared)
    : id_(std::move(id)),
      generation_(generation),
      address_(std::move(self)),
      config_(config),
      scheduler_(scheduler),
      rng_(rng),
      transport_(transport),
      framer_(framer != nullptr ? *framer : plaintext_),
      listener_(listener),
      shared_(shared),
      broadcasts_(/*refutations_first=*/config.signatures != SignatureMode::kOff),
      overload_(config.overload) {
  if (config_.landmark_stride == 0) config_.landmark_stride = 1;
  self_store_ =
      std::make_unique<OriginStore>(id_, generation_, config_.min_tombstones,
                                    shared_ != nullptr ? shared_->For(id_, generation_) : nullptr,
                                    /*writer=*/true, config_.landmark_stride);
  if (config_.signatures != SignatureMode::kOff) {
    published_ = std::make_unique<OriginStore>(id_, generation_, config_.min_tombstones);
    if (config_.signatures == SignatureMode::kEd25519) published_->EnableCommitment();
    published_->set_whole_runs(true);
  }
  self_id_hash_ = HashId(id_);
  digest_hash_ = DigestTerm(self_id_hash_, generation_, 0);
  digest_count_ = 1;
}

Node::~Node() = default;

// ---------------------------------------------------------------------------------------------
// Timers

TimerId Node::After(Duration d, void (Node::*fn)()) {
  return AfterFn(d, [this, fn] { (this->*fn)(); });
}

void Node::Start(std::span<const Address> seeds) {
  if (started_) return;
  started_ = true;
  for (const auto& s : seeds) {
    if (s != address_) seeds_.push_back(s);
  }
  if (signing() && !signing_key_) {
    std::array<uint8_t, kSigningSeedBytes> seed{};
    if (config_.signing_seed) {
      seed = *config_.signing_seed;
    } else {
      for (auto& b : seed) b = static_cast<uint8_t>(rng_.Below(256));
    }
    signing_key_ = SigningKey::FromSeed(seed);
  }
  WriteOwnLoad();
  if (signing()) SignTick();
  Broadcast(SelfUpdate(MemberState::kAlive));
  JoinTick();
  // Random phases, so nodes started together do not act in lockstep.
  auto jitter = [this](Duration d) {
    return Duration(static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(d.count()) + 1)));
  };
  After(jitter(config_.probe_interval), &Node::ProbeTick);
  After(jitter(config_.gossip_interval), &Node::GossipTick);
  After(config_.push_pull_interval + jitter(config_.push_pull_interval), &Node::PushPullTick);
  After(config_.reconnect_interval + jitter(config_.reconnect_interval), &Node::ReconnectTick);
  After(config_.heartbeat_interval, &Node::HeartbeatTick);
}

void Node::JoinTick() {
  if (left_) return;
  // Every seed is contacted until it is a known member, not only until the first one answers:
  // if the seeds' first messages to each other are lost and each joiner reaches only one seed,
  // stopping early leaves two islands that never learn of each other (no member of one ever
  // names a member of the other). Once joined, the retries back off, so an unreachable seed
  // costs little.
  bool contacted = false;
  for (const auto& seed : seeds_) {
    if (KnowsAddress(seed)) continue;
    Message m = NewMessage(MsgType::kPushPull);
    m.reply_wanted = true;
    m.members.push_back(SelfUpdate(MemberState::kAlive));
    Send(seed, std::move(m));
    contacted = true;
  }
  if (live_member_count() == 0 || !contacted) {
    join_backoff_ = config_.join_retry_interval;
  } else {
    join_backoff_ = std::min(join_backoff_ * 2, config_.join_retry_max_interval);
  }
  After(join_backoff_, &Node::JoinTick);
}

bool Node::KnowsAddress(const Address& address) const {
  return std::any_of(ordered_.begin(), ordered_.end(),
                     [&](const MemberRec* m) { return m->address == address; });
}

void Node::Leave() {
  if (left_) return;
  MemberUpdate bye = SelfUpdate(MemberState::kLeft);
  for (MemberRec* m : RandomLive(2 * static_cast<size_t>(config_.gossip_fanout), {})) {
    for (int copy = 0; copy < 2; ++copy) SendNotice(m->address, bye);
  }
  left_ = true;
  // Stops every timer: pending ones see an expired token.
  alive_token_ = std::make_shared<int>(0);
}

void Node::HeartbeatTick() {
  if (left_) return;
  if (scheduler_.clock().Now() - last_load_write_ >= config_.heartbeat_interval) WriteOwnLoad();
  After(config_.heartbeat_interval, &Node::HeartbeatTick);
}

// ---------------------------------------------------------------------------------------------
// Views

std::vector<MemberView> Node::Members() const {
  std::vector<MemberView> out;
  out.reserve(members_.size());
  for (const MemberRec* m : ordered_) out.push_back(ViewOf(*m));
  return out;
}

void Node::ForEachMemberRoute(const std::function<void(const MemberRoute&)>& fn) const {
  for (const MemberRec* m : ordered_) {
    fn(MemberRoute{.id = m->id,
                   .address = m->address,
                   .api_address = m->api_address,
                   .generation = m->generation,
                   .state = m->state,
                   .rtt_ms = m->has_rtt ? std::optional<double>(m->srtt_ms) : std::nullopt});
  }
}

std::optional<MemberView> Node::Member(const NodeId& id) const {
  auto it = members_.find(id);
  if (it == members_.end()) return std::nullopt;
  return ViewOf(it->second);
}

MemberView Node::ViewOf(const MemberRec& m) {
  MemberView v;
  v.id = m.id;
  v.address = m.address;
  v.api_address = m.api_address;
  v.generation = m.generation;
  v.incarnation = m.incarnation;
  v.state = m.state;
  v.state_since = m.since;
  v.has_load = m.load.version > 0;
  v.load = m.load.load;
  v.load_updated = m.load_at;
  if (m.has_rtt) v.rtt_ms = m.srtt_ms;
  v.known_version = m.store ? m.store->max_version() : 0;
  v.last_heard = m.last_heard_at;
  return v;
}

uint32_t Node::PeerStride(const NodeId& peer) const {
  const OriginStore* s = StoreFor(peer);
  return s == nullptr ? 0 : s->stride();
}

const OriginStore* Node::PeerStore(const NodeId& id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.store.get();
}

uint32_t Node::EstimateMatchedBlocks(const NodeId& peer,
                                     std::span<const prefix::BlockKey> chain) const {
  const OriginStore* s = StoreFor(peer);
  if (s == nullptr || chain.empty()) return 0;
  const uint32_t stride = s->stride() != 0 ? s->stride() : config_.landmark_stride;
  const uint32_t last = static_cast<uint32_t>(chain.size() - 1);
  for (int64_t i = last - last % stride; i >= 0; i -= stride) {
    if (s->Contains(chain[static_cast<size_t>(i)])) return static_cast<uint32_t>(i) + 1;
  }
  return 0;
}

}  // namespace hearsay::gossip
