#include "hearsay/gossip/broadcast_queue.h"

namespace hearsay::gossip {

void BroadcastQueue::Push(MemberUpdate u) {
  auto it = items_.find(u.id);
  if (it != items_.end()) {
    order_.erase(KeyOf(it->second));
    items_.erase(it);
  }
  Item item{std::move(u), 0, next_seq_++, {}, {}};
  order_.insert(KeyOf(item));
  const NodeId id = item.update.id;
  items_.emplace(id, std::move(item));
}

const MemberUpdate* BroadcastQueue::Find(const NodeId& id) const {
  auto it = items_.find(id);
  return it == items_.end() ? nullptr : &it->second.update;
}

std::vector<MemberUpdate> BroadcastQueue::Take(size_t budget_bytes, int transmit_limit,
                                               const NodeId& prefer, const Address& to,
                                               TimePoint now) {
  std::vector<MemberUpdate> out;
  std::vector<NodeId> picked;
  size_t used = 0;
  auto try_pick = [&](const Item& item) {
    const size_t need = EncodedSize(item.update);
    if (used + need > budget_bytes) return false;
    used += need;
    out.push_back(item.update);
    picked.push_back(item.update.id);
    return true;
  };
  if (!prefer.empty()) {
    auto it = items_.find(prefer);
    if (it != items_.end()) try_pick(it->second);
  }
  for (const Key& key : order_) {
    if (used >= budget_bytes) break;
    const NodeId& id = std::get<3>(key);
    if (!prefer.empty() && id == prefer) continue;
    if (!try_pick(items_.at(id)) && used + 16 > budget_bytes) break;
  }
  for (const NodeId& id : picked) {
    auto it = items_.find(id);
    Item& item = it->second;
    if (item.transmits > 0 && item.last_to == to && now - item.last_at < kBurst) continue;
    order_.erase(KeyOf(item));
    item.last_to = to;
    item.last_at = now;
    if (++item.transmits >= transmit_limit) {
      items_.erase(it);
    } else {
      order_.insert(KeyOf(it->second));
    }
  }
  return out;
}

}  // namespace hearsay::gossip
