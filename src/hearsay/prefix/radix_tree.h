// RadixTree: a node's own prefix-cache index, token-exact, with LRU eviction, pinning and block
// events. It is both the simulated engine's KV cache and the exact answer to "how much of this
// prompt does my engine hold?".
//
// Shape. Like SGLang's RadixCache: a radix tree over token ids whose edges are compressed runs of
// tokens. Every cached token is the last token of one root path (a cached prefix); the tree holds
// exactly the set of cached prefixes, which is closed under taking prefixes.
//
// Capacity and eviction. Capacity is in tokens (one token of KV per tree token). The tree never
// holds more than capacity_tokens. Insert first evicts as much as it needs, least recently used
// first, then stores the longest prefix of the request that fits; if pinned content leaves too
// little room it stores what fits (possibly nothing) and says so in InsertResult: that is not an
// error (the engine decides whether to admit a request; see free_tokens()/pinned_tokens()).
// Eviction is token-granular: it trims the least recently used unpinned leaf from its tail, so
// exactly the tokens needed are freed. Recency is a caller-supplied logical tick (any uint64 the
// caller finds monotone, such as a TimePoint's count or an operation counter); the tree never
// reads a clock. Among leaves with equal ticks, older nodes go first (deterministic).
//
// Capacity 0 is allowed and means "caches nothing": every Insert stores 0 tokens and every match
// is 0. That models an engine with prefix caching turned off.
//
// Pinning. Pin() and Insert(..., pin = true) pin a cached prefix for an in-flight request and
// return a PinHandle; pinned tokens are never evicted until Unpin(handle). Handles are never
// reused, so an unknown, stale or twice-released handle is answered with NOT_FOUND, never a crash.
//
// Block events. A block (tokens_per_block tokens of the keyer) is held exactly when all of its
// tokens are in the tree. Every mutating call appends a kAdded event for each block it completes
// and a kRemoved event for each block it breaks to a caller-provided vector (nullptr discards
// them); replaying all events in order yields exactly the held set. Keys of held blocks are
// stored in the nodes, computed once when their block is completed.
//
// Namespaces. A tree has one keyer. With RadixTreeOptions::namespace_headers, it also holds the
// cache namespaces of block_keys.h: a sequence NamespaceBlock(ns) | prompt is a prompt of
// namespace ns, and its first block is a header, not a block of the prompt. The header is cached
// (it takes its tokens of capacity and chains the prompt's keys, as AppendNamespacedKeys does),
// but it is never reported: no event, no snapshot entry, not counted in held_blocks(), and the
// prompt's blocks are indexed from 0 (block_index of the block after the header is 0). A root path
// is namespaced when its first token is a namespace token (IsNamespaceToken).
//
// Side effects: Peek and the accessors never change anything. Match and Pin refresh recency and
// may split a node at the match end (no events: the set of cached prefixes is unchanged).
//
// Costs: Peek/Match/Pin are O(matched tokens + nodes on the path * log(branching)); Insert adds
// O(new tokens) plus key hashing for the completed blocks; eviction is O(log leaves) per leaf.
// Nothing is recursive, so a 1,000,000-token prompt or a very deep tree is fine.
//
// Thread-safety: none; the owning core's thread only. Const methods may run concurrently with each
// other only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/block_keys.h"

namespace hearsay::prefix {

struct RadixTreeOptions {
  // Most tokens the tree holds; 0 means the tree caches nothing.
  uint64_t capacity_tokens = 262144;
  // Whether a root path that begins with a namespace token begins with a namespace block that is
  // a header, never reported (see "Namespaces" above).
  bool namespace_headers = false;
};

// Names one pin. Value 0 is never issued.
struct PinHandle {
  uint64_t id = 0;

  bool valid() const { return id != 0; }
  friend bool operator==(const PinHandle&, const PinHandle&) = default;
};

struct InsertResult {
  // Leading tokens of the request that were already cached.
  size_t matched_tokens = 0;
  // Tokens newly stored by this insert.
  size_t inserted_tokens = 0;
  // matched_tokens + inserted_tokens: the prefix of the request now cached. Less than the request
  // length only when capacity (after eviction, given the pins) ran out.
  size_t cached_tokens = 0;
  // Tokens evicted to make room.
  size_t evicted_tokens = 0;
  // When pinning was asked for: pins the cached_tokens prefix. Invalid otherwise.
  PinHandle pin;
};

struct PinResult {
  // Length of the prefix that was cached and is now pinned.
  size_t tokens = 0;
  PinHandle handle;
};

class RadixTree {
 public:
  // An empty tree keyed by `keyer`.
  explicit RadixTree(BlockKeyer keyer, RadixTreeOptions options = {});
  ~RadixTree();
  RadixTree(RadixTree&&) noexcept;
  RadixTree& operator=(RadixTree&&) noexcept;
  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;

  // Length in tokens of the longest cached prefix of `tokens`. No side effects (for the oracle
  // policy, and for estimates).
  size_t Peek(std::span<const TokenId> tokens) const;
  // Like Peek, and marks the matched prefix used at `tick`.
  size_t Match(std::span<const TokenId> tokens, uint64_t tick);
  // Matches like Match and pins the matched prefix (possibly empty) until Unpin.
  PinResult Pin(std::span<const TokenId> tokens, uint64_t tick);
  // Releases a pin. NOT_FOUND if `handle` was never issued or was already released.
  Status Unpin(PinHandle handle);

  // Caches `tokens` as used at `tick`: evicts unpinned LRU content as needed, then stores the
  // longest prefix that fits (see InsertResult). With `pin`, pins the cached prefix. Appends block
  // events to `events` unless it is nullptr.
  InsertResult Insert(std::span<const TokenId> tokens, uint64_t tick,
                      std::vector<BlockEvent>* events, bool pin = false);

  // Evicts up to `tokens` unpinned tokens, least recently used first; returns how many. Appends
  // kRemoved events to `events` unless it is nullptr.
  size_t Evict(size_t tokens, std::vector<BlockEvent>* events);

  // Appends a kAdded event for every held block, parents before children (a snapshot that,
  // replayed into an empty index, reproduces the held set).
  void AppendHeldBlocks(std::vector<BlockEvent>* out) const;
  // The keys of every held block, parents before children.
  std::vector<BlockKey> HeldKeys() const;

  const BlockKeyer& keyer() const { return keyer_; }
  uint64_t capacity_tokens() const { return capacity_; }
  // Tokens cached now; never more than capacity_tokens().
  uint64_t size_tokens() const { return size_tokens_; }
  // Cached tokens that are pinned by at least one handle.
  uint64_t pinned_tokens() const { return pinned_tokens_; }
  // Cached tokens that eviction could free now.
  uint64_t evictable_tokens() const { return size_tokens_ - pinned_tokens_; }
  // Room left without evicting.
  uint64_t free_tokens() const { return capacity_ - size_tokens_; }
  // Full blocks held now, as the events report them (namespace headers left out).
  uint64_t held_blocks() const { return held_blocks_; }
  // Live pin handles.
  size_t pin_count() const { return pins_.size(); }
  // Tree nodes, root excluded.
  size_t node_count() const { return node_count_; }

  // Checks every structural invariant (including recomputing all block keys); OK or INTERNAL
  // naming the first violation. O(tokens * depth): for tests.
  Status CheckInvariants() const;

 private:
  struct Node;
  struct LruKey {
    uint64_t tick;
    uint64_t id;
    Node* node;
    bool operator<(const LruKey& o) const { return tick != o.tick ? tick < o.tick : id < o.id; }
  };
  // Where a walk from the root stopped: `node` is fully matched at `depth` tokens; `partial`
  // tokens of the edge into `child` also match (0 if child is null).
  struct Cursor {
    Node* node;
    size_t depth;
    Node* child;
    size_t partial;
  };

  Cursor Walk(std::span<const TokenId> tokens) const;
  // Walks, marks the matched path used at `tick`, splits the last edge so the match ends at a
  // node; returns that node and the matched length.
  Node* MatchAndSplit(std::span<const TokenId> tokens, uint64_t tick, size_t* matched);
  // Splits `node`'s edge after `k` tokens (0 < k < edge length); returns the new upper node.
  Node* Split(Node* node, size_t k);
  void Touch(Node* node, uint64_t tick);
  void LockPath(Node* node);
  void UnlockPath(Node* node);
  // Puts `node` in the LRU set exactly when it is evictable.
  void RefreshLru(Node* node);
  size_t EvictInternal(size_t tokens, std::vector<BlockEvent>* events);
  // The key of the last full block that ends at or above `node`'s end (ancestors included).
  BlockKey LastKeyAtOrAbove(const Node* node) const;
  // Appends an event for block `index` of `node`'s root path (counted from the root), unless it is
  // a namespace header; returns whether it did (see "Namespaces").
  static bool EmitBlock(std::vector<BlockEvent>* events, BlockEvent::Kind kind, const Node* node,
                        BlockKey key, size_t index);
  // Of the blocks first .. first + count - 1 of `node`'s root path, those reported (not headers).
  static size_t ReportedBlocks(const Node* node, size_t first, size_t count);
  PinHandle AddPin(Node* node);
  std::unique_ptr<Node> NewNode(Node* parent, size_t start, uint64_t tick);

  // Invariants (checked by CheckInvariants):
  //  - root_ has no tokens, no keys, start 0; every other node has >= 1 token, and its start is
  //    its parent's start + parent's edge length; children are sorted by first token, distinct.
  //  - a node's keys are exactly the keys of the blocks whose last token lies on its edge.
  //  - a node is `headed` exactly when namespace_headers_ and its root path's first token is a
  //    namespace token.
  //  - a node's lock = pins ending at it + sum of its children's locks.
  //  - lru_ holds exactly the non-root leaves with lock 0, keyed by their (tick, id).
  //  - size_tokens_, pinned_tokens_ (edges with lock > 0), held_blocks_ (reported blocks),
  //    node_count_ are the sums over nodes; size_tokens_ <= capacity_.
  BlockKeyer keyer_;
  uint64_t capacity_;
  bool namespace_headers_;
  std::unique_ptr<Node> root_;
  std::set<LruKey> lru_;
  std::unordered_map<uint64_t, Node*> pins_;
  uint64_t next_node_id_ = 1;
  uint64_t next_pin_id_ = 1;
  uint64_t size_tokens_ = 0;
  uint64_t pinned_tokens_ = 0;
  uint64_t held_blocks_ = 0;
  size_t node_count_ = 0;
};

}  // namespace hearsay::prefix
