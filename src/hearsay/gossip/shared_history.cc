#include "hearsay/gossip/shared_history.h"

#include <algorithm>

#include "hearsay/common/check.h"

namespace hearsay::gossip {

void SharedHistory::RecordCache(uint64_t version, prefix::BlockKey key, uint32_t block_index,
                                bool live) {
  HEARSAY_CHECK(version == max_version() + 1);
  auto [it, inserted] = last_write_.try_emplace(key, version);
  const uint64_t prev = inserted ? 0 : it->second;
  if (!inserted) {
    writes_[prev - 1].next = version;
    it->second = version;
  }
  writes_.push_back({key, block_index, live, false, prev, 0});
}

void SharedHistory::RecordLoad(uint64_t version) {
  HEARSAY_CHECK(version == max_version() + 1);
  writes_.push_back({0, 0, false, true, 0, 0});
}

uint64_t SharedHistory::LatestAt(prefix::BlockKey key, uint64_t version) const {
  auto it = last_write_.find(key);
  return it == last_write_.end() ? 0 : SameKeyAtOrBelow(it->second, version);
}

std::shared_ptr<SharedHistory> SharedHistories::For(const NodeId& id, Generation generation) {
  auto& h = histories_[{id, generation}];
  if (!h) h = std::make_shared<SharedHistory>();
  return h;
}

}  // namespace hearsay::gossip
