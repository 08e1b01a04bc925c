// Fuzzes RadixTree with operation sequences decoded from the input: insert (optionally pinned),
// match, peek, pin, unpin (live, stale or bogus handles) and evict, on a small tree with a small
// alphabet. After every operation it checks the structural invariants, the capacity bound, that
// pinned prefixes stay cached, and that replaying the emitted block events gives the held set.
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "hearsay/common/check.h"
#include "hearsay/prefix/radix_tree.h"

namespace {

using hearsay::prefix::BlockEvent;
using hearsay::prefix::BlockKey;
using hearsay::prefix::BlockKeyer;
using hearsay::prefix::PinHandle;
using hearsay::prefix::RadixTree;
using hearsay::prefix::TokenId;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const size_t block = 1 + in.Next() % 8;
  const uint64_t capacity = in.Next();
  auto keyer =
      BlockKeyer::Create("fuzz-cluster-secret-0123456789", "m", "t", {.tokens_per_block = block});
  HEARSAY_CHECK(keyer.ok());
  RadixTree tree(*keyer, {.capacity_tokens = capacity});
  std::vector<BlockEvent> events;
  std::set<BlockKey> replayed;
  std::vector<std::pair<PinHandle, std::vector<TokenId>>> pins;
  uint64_t tick = 0;

  for (int op = 0; op < 256 && !in.empty(); ++op) {
    const uint8_t kind = in.Next() % 7;
    std::vector<TokenId> tokens(in.Next() % 48);
    for (auto& t : tokens) t = in.Next() % 4;
    ++tick;
    switch (kind) {
      case 0:
      case 1: {
        const auto r = tree.Insert(tokens, tick, &events, kind == 1);
        HEARSAY_CHECK(r.cached_tokens == r.matched_tokens + r.inserted_tokens);
        HEARSAY_CHECK(r.cached_tokens <= tokens.size());
        if (kind == 1) {
          pins.push_back({r.pin, {tokens.begin(), tokens.begin() + r.cached_tokens}});
        }
        break;
      }
      case 2: {
        const size_t peek = tree.Peek(tokens);
        HEARSAY_CHECK(tree.Match(tokens, tick) == peek);
        break;
      }
      case 3: {
        const auto p = tree.Pin(tokens, tick);
        pins.push_back({p.handle, {tokens.begin(), tokens.begin() + p.tokens}});
        break;
      }
      case 4:
        if (!pins.empty()) {
          const size_t i = tokens.size() % pins.size();
          HEARSAY_CHECK(tree.Unpin(pins[i].first).ok());
          HEARSAY_CHECK(!tree.Unpin(pins[i].first).ok());
          pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          HEARSAY_CHECK(!tree.Unpin(PinHandle{tick * 1000}).ok());
        }
        break;
      default:
        (void)tree.Evict(tokens.size() * 3, &events);
        break;
    }
    const auto status = tree.CheckInvariants();
    HEARSAY_CHECK_MSG(status.ok(), status.ToString());
    HEARSAY_CHECK(tree.size_tokens() <= capacity);
    for (const auto& [handle, prefix] : pins) HEARSAY_CHECK(tree.Peek(prefix) == prefix.size());
    for (const BlockEvent& e : events) {
      if (e.kind == BlockEvent::Kind::kAdded) {
        HEARSAY_CHECK(replayed.insert(e.key).second);
      } else {
        HEARSAY_CHECK(replayed.erase(e.key) == 1);
      }
    }
    events.clear();
    const auto held = tree.HeldKeys();
    HEARSAY_CHECK(std::set<BlockKey>(held.begin(), held.end()) == replayed);
  }
  return 0;
}
