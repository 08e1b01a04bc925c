#include "hearsay/prefix/radix_tree.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace hearsay::prefix {

struct RadixTree::Node {
  Node* parent = nullptr;
  // The edge from parent: the tokens at depths start .. start + tokens.size() - 1.
  std::vector<TokenId> tokens;
  // Sorted by first token.
  std::vector<std::pair<TokenId, std::unique_ptr<Node>>> children;
  // Keys of blocks start / B .. end / B - 1 (the blocks whose last token is on this edge).
  std::vector<BlockKey> keys;
  size_t start = 0;
  uint64_t tick = 0;
  uint64_t id = 0;
  uint32_t lock = 0;
  bool in_lru = false;
  // The root path begins with a namespace header (RadixTreeOptions::namespace_headers).
  bool headed = false;

  size_t end() const { return start + tokens.size(); }

  Node* FindChild(TokenId first) const {
    auto it = std::lower_bound(children.begin(), children.end(), first,
                               [](const auto& c, TokenId t) { return c.first < t; });
    return it != children.end() && it->first == first ? it->second.get() : nullptr;
  }
  std::unique_ptr<Node>* ChildSlot(TokenId first) {
    auto it = std::lower_bound(children.begin(), children.end(), first,
                               [](const auto& c, TokenId t) { return c.first < t; });
    return it != children.end() && it->first == first ? &it->second : nullptr;
  }
  void AddChild(std::unique_ptr<Node> child) {
    const TokenId first = child->tokens.front();
    auto it = std::lower_bound(children.begin(), children.end(), first,
                               [](const auto& c, TokenId t) { return c.first < t; });
    children.emplace(it, first, std::move(child));
  }
  void RemoveChild(TokenId first) {
    auto it = std::lower_bound(children.begin(), children.end(), first,
                               [](const auto& c, TokenId t) { return c.first < t; });
    HEARSAY_CHECK(it != children.end() && it->first == first);
    children.erase(it);
  }
};

namespace {

// Destroys a subtree without recursion, so a very deep tree cannot overflow the stack.
template <typename NodeT>
void DestroyIteratively(std::unique_ptr<NodeT> root) {
  std::vector<std::unique_ptr<NodeT>> stack;
  if (root) stack.push_back(std::move(root));
  while (!stack.empty()) {
    std::unique_ptr<NodeT> node = std::move(stack.back());
    stack.pop_back();
    for (auto& [first, child] : node->children) stack.push_back(std::move(child));
  }
}

// The length of the common prefix of a[0, n) and b[0, n). Edges are long (a shared prompt prefix
// is hundreds of tokens) and usually match whole, so 64-token chunks are compared with memcmp
// (vectorised), then 8-token chunks, and only the last few tokens one by one.
size_t CommonPrefix(const TokenId* a, const TokenId* b, size_t n) {
  size_t i = 0;
  while (i + 64 <= n && std::memcmp(a + i, b + i, 64 * sizeof(TokenId)) == 0) i += 64;
  while (i + 8 <= n && std::memcmp(a + i, b + i, 8 * sizeof(TokenId)) == 0) i += 8;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

bool RadixTree::EmitBlock(std::vector<BlockEvent>* events, BlockEvent::Kind kind, const Node* node,
                          BlockKey key, size_t index) {
  const size_t header = node->headed ? 1 : 0;
  if (index < header) return false;
  if (events != nullptr) events->push_back({kind, key, static_cast<uint32_t>(index - header)});
  return true;
}

size_t RadixTree::ReportedBlocks(const Node* node, size_t first, size_t count) {
  const size_t header = node->headed ? 1 : 0;
  return count - (std::min(first + count, header) - std::min(first, header));
}

RadixTree::RadixTree(BlockKeyer keyer, RadixTreeOptions options)
    : keyer_(std::move(keyer)),
      capacity_(options.capacity_tokens),
      namespace_headers_(options.namespace_headers),
      root_(std::make_unique<Node>()) {}

RadixTree::~RadixTree() { DestroyIteratively(std::move(root_)); }

RadixTree::RadixTree(RadixTree&&) noexcept = default;

RadixTree& RadixTree::operator=(RadixTree&& other) noexcept {
  if (this == &other) return *this;
  std::unique_ptr<Node> old = std::move(root_);
  keyer_ = std::move(other.keyer_);
  capacity_ = other.capacity_;
  namespace_headers_ = other.namespace_headers_;
  root_ = std::move(other.root_);
  lru_ = std::move(other.lru_);
  pins_ = std::move(other.pins_);
  next_node_id_ = other.next_node_id_;
  next_pin_id_ = other.next_pin_id_;
  size_tokens_ = other.size_tokens_;
  pinned_tokens_ = other.pinned_tokens_;
  held_blocks_ = other.held_blocks_;
  node_count_ = other.node_count_;
  DestroyIteratively(std::move(old));
  return *this;
}

std::unique_ptr<RadixTree::Node> RadixTree::NewNode(Node* parent, size_t start, uint64_t tick) {
  auto node = std::make_unique<Node>();
  node->parent = parent;
  node->start = start;
  node->tick = tick;
  node->id = next_node_id_++;
  ++node_count_;
  return node;
}

RadixTree::Cursor RadixTree::Walk(std::span<const TokenId> tokens) const {
  Node* node = root_.get();
  size_t depth = 0;
  while (depth < tokens.size()) {
    Node* child = node->FindChild(tokens[depth]);
    if (child == nullptr) break;
    const size_t limit = std::min(child->tokens.size(), tokens.size() - depth);
    const size_t k = CommonPrefix(child->tokens.data(), tokens.data() + depth, limit);
    if (k < child->tokens.size()) return {node, depth, child, k};
    node = child;
    depth += k;
  }
  return {node, depth, nullptr, 0};
}

size_t RadixTree::Peek(std::span<const TokenId> tokens) const {
  const Cursor c = Walk(tokens);
  return c.depth + c.partial;
}

void RadixTree::Touch(Node* node, uint64_t tick) {
  if (node->in_lru) {
    lru_.erase({node->tick, node->id, node});
    node->tick = tick;
    lru_.insert({node->tick, node->id, node});
  } else {
    node->tick = tick;
  }
}

RadixTree::Node* RadixTree::MatchAndSplit(std::span<const TokenId> tokens, uint64_t tick,
                                          size_t* matched) {
  Cursor c = Walk(tokens);
  Node* end = c.node;
  if (c.partial > 0) end = Split(c.child, c.partial);
  *matched = c.depth + c.partial;
  for (Node* n = end; n != nullptr; n = n->parent) Touch(n, tick);
  return end;
}

RadixTree::Node* RadixTree::Split(Node* node, size_t k) {
  HEARSAY_CHECK(k > 0 && k < node->tokens.size());
  Node* parent = node->parent;
  std::unique_ptr<Node>* slot = parent->ChildSlot(node->tokens.front());
  HEARSAY_CHECK(slot != nullptr && slot->get() == node);

  std::unique_ptr<Node> upper = NewNode(parent, node->start, node->tick);
  upper->tokens.assign(node->tokens.begin(), node->tokens.begin() + k);
  upper->lock = node->lock;
  upper->headed = node->headed;
  const size_t b = keyer_.tokens_per_block();
  const size_t upper_keys = (node->start + k) / b - node->start / b;
  upper->keys.assign(node->keys.begin(), node->keys.begin() + upper_keys);
  node->keys.erase(node->keys.begin(), node->keys.begin() + upper_keys);
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + k);
  node->start += k;
  node->parent = upper.get();

  Node* upper_raw = upper.get();
  std::unique_ptr<Node> lower = std::move(*slot);
  *slot = std::move(upper);
  upper_raw->AddChild(std::move(lower));
  // The lower part keeps its leaf status; the upper part has a child, so neither changes LRU.
  return upper_raw;
}

size_t RadixTree::Match(std::span<const TokenId> tokens, uint64_t tick) {
  size_t matched = 0;
  MatchAndSplit(tokens, tick, &matched);
  return matched;
}

PinHandle RadixTree::AddPin(Node* node) {
  LockPath(node);
  const PinHandle handle{next_pin_id_++};
  pins_.emplace(handle.id, node);
  return handle;
}

PinResult RadixTree::Pin(std::span<const TokenId> tokens, uint64_t tick) {
  PinResult result;
  Node* end = MatchAndSplit(tokens, tick, &result.tokens);
  result.handle = AddPin(end);
  return result;
}

Status RadixTree::Unpin(PinHandle handle) {
  auto it = pins_.find(handle.id);
  if (it == pins_.end()) {
    return NotFoundError("unknown or already released pin handle " + std::to_string(handle.id));
  }
  UnlockPath(it->second);
  pins_.erase(it);
  return OkStatus();
}

void RadixTree::LockPath(Node* node) {
  for (Node* n = node; n != nullptr; n = n->parent) {
    if (n->lock++ == 0) {
      pinned_tokens_ += n->tokens.size();
      RefreshLru(n);
    }
  }
}

void RadixTree::UnlockPath(Node* node) {
  for (Node* n = node; n != nullptr; n = n->parent) {
    HEARSAY_CHECK(n->lock > 0);
    if (--n->lock == 0) {
      pinned_tokens_ -= n->tokens.size();
      RefreshLru(n);
    }
  }
}

void RadixTree::RefreshLru(Node* node) {
  const bool evictable = node != root_.get() && node->children.empty() && node->lock == 0;
  if (evictable == node->in_lru) return;
  if (evictable) {
    lru_.insert({node->tick, node->id, node});
  } else {
    lru_.erase({node->tick, node->id, node});
  }
  node->in_lru = evictable;
}

BlockKey RadixTree::LastKeyAtOrAbove(const Node* node) const {
  for (const Node* n = node; n != nullptr; n = n->parent) {
    if (!n->keys.empty()) return n->keys.back();
  }
  return 0;
}

InsertResult RadixTree::Insert(std::span<const TokenId> tokens, uint64_t tick,
                               std::vector<BlockEvent>* events, bool pin) {
  InsertResult result;
  Node* end = MatchAndSplit(tokens, tick, &result.matched_tokens);
  const size_t m = result.matched_tokens;
  const size_t want = tokens.size() - m;
  if (want > free_tokens()) {
    // The matched path is where the new edge hangs: keep it while making room.
    LockPath(end);
    result.evicted_tokens = EvictInternal(want - free_tokens(), events);
    UnlockPath(end);
  }
  const size_t take = std::min<uint64_t>(want, free_tokens());
  if (take > 0) {
    std::unique_ptr<Node> leaf = NewNode(end, m, tick);
    leaf->tokens.assign(tokens.begin() + m, tokens.begin() + m + take);
    leaf->headed = namespace_headers_ && IsNamespaceToken(tokens.front());
    const size_t b = keyer_.tokens_per_block();
    const size_t first_block = m / b;
    keyer_.AppendKeysFrom(tokens.first(m + take), first_block,
                          first_block > 0 ? LastKeyAtOrAbove(end) : 0, &leaf->keys);
    for (size_t i = 0; i < leaf->keys.size(); ++i) {
      EmitBlock(events, BlockEvent::Kind::kAdded, leaf.get(), leaf->keys[i], first_block + i);
    }
    size_tokens_ += take;
    held_blocks_ += ReportedBlocks(leaf.get(), first_block, leaf->keys.size());
    Node* leaf_raw = leaf.get();
    end->AddChild(std::move(leaf));
    RefreshLru(end);
    RefreshLru(leaf_raw);
    end = leaf_raw;
  }
  result.inserted_tokens = take;
  result.cached_tokens = m + take;
  if (pin) result.pin = AddPin(end);
  return result;
}

size_t RadixTree::Evict(size_t tokens, std::vector<BlockEvent>* events) {
  return EvictInternal(tokens, events);
}

size_t RadixTree::EvictInternal(size_t tokens, std::vector<BlockEvent>* events) {
  const size_t b = keyer_.tokens_per_block();
  size_t evicted = 0;
  while (evicted < tokens && !lru_.empty()) {
    Node* leaf = lru_.begin()->node;
    const size_t cut = std::min(leaf->tokens.size(), tokens - evicted);
    const size_t new_end = leaf->end() - cut;
    // Blocks that end past the new end are broken; deepest first.
    const size_t keep = new_end / b - leaf->start / b;
    for (size_t i = leaf->keys.size(); i > keep; --i) {
      EmitBlock(events, BlockEvent::Kind::kRemoved, leaf, leaf->keys[i - 1],
                leaf->start / b + i - 1);
    }
    held_blocks_ -= ReportedBlocks(leaf, leaf->start / b + keep, leaf->keys.size() - keep);
    leaf->keys.resize(keep);
    size_tokens_ -= cut;
    evicted += cut;
    if (cut < leaf->tokens.size()) {
      leaf->tokens.resize(leaf->tokens.size() - cut);
      continue;
    }
    lru_.erase(lru_.begin());
    leaf->in_lru = false;
    Node* parent = leaf->parent;
    --node_count_;
    parent->RemoveChild(leaf->tokens.front());
    RefreshLru(parent);
  }
  return evicted;
}

void RadixTree::AppendHeldBlocks(std::vector<BlockEvent>* out) const {
  const size_t b = keyer_.tokens_per_block();
  out->reserve(out->size() + held_blocks_);
  std::vector<const Node*> stack = {root_.get()};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < node->keys.size(); ++i) {
      EmitBlock(out, BlockEvent::Kind::kAdded, node, node->keys[i], node->start / b + i);
    }
    for (auto it = node->children.rbegin(); it != node->children.rend(); ++it) {
      stack.push_back(it->second.get());
    }
  }
}

std::vector<BlockKey> RadixTree::HeldKeys() const {
  std::vector<BlockEvent> blocks;
  AppendHeldBlocks(&blocks);
  std::vector<BlockKey> keys;
  keys.reserve(blocks.size());
  for (const auto& e : blocks) keys.push_back(e.key);
  return keys;
}

Status RadixTree::CheckInvariants() const {
  auto fail = [](std::string what) { return InternalError("radix tree invariant: " + what); };
  if (root_ == nullptr) return fail("no root (moved-from tree)");
  const Node* root = root_.get();
  if (!root->tokens.empty() || !root->keys.empty() || root->start != 0 || root->in_lru ||
      root->parent != nullptr) {
    return fail("root must be empty");
  }
  std::unordered_map<const Node*, uint32_t> direct_pins;
  for (const auto& [id, node] : pins_) {
    if (id == 0 || id >= next_pin_id_) return fail("pin id out of range");
    ++direct_pins[node];
  }
  const size_t b = keyer_.tokens_per_block();
  uint64_t size = 0, pinned = 0, held = 0;
  size_t nodes = 0, in_lru = 0;
  std::vector<const Node*> stack = {root};
  std::vector<TokenId> path;
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    const std::string where = "node " + std::to_string(node->id) + ": ";
    if (node != root) {
      ++nodes;
      if (node->tokens.empty()) return fail(where + "empty edge");
      if (node->start != node->parent->end()) return fail(where + "start != parent end");
      if (node->parent->FindChild(node->tokens.front()) != node) return fail(where + "not found");
    }
    uint32_t lock = direct_pins.count(node) ? direct_pins.at(node) : 0;
    for (size_t i = 0; i < node->children.size(); ++i) {
      const auto& [first, child] = node->children[i];
      if (child->parent != node) return fail(where + "child's parent pointer");
      if (first != child->tokens.front()) return fail(where + "child index token");
      if (i > 0 && node->children[i - 1].first >= first) return fail(where + "children order");
      lock += child->lock;
      stack.push_back(child.get());
    }
    if (lock != node->lock) return fail(where + "lock count");
    const bool evictable = node != root && node->children.empty() && node->lock == 0;
    if (evictable != node->in_lru) return fail(where + "LRU membership");
    if (node->in_lru) {
      ++in_lru;
      if (lru_.count({node->tick, node->id, nullptr}) == 0) return fail(where + "LRU key");
    }
    // Recompute this edge's block keys from the full root path.
    path.clear();
    for (const Node* n = node; n != nullptr; n = n->parent) {
      path.insert(path.begin(), n->tokens.begin(), n->tokens.end());
    }
    if (node->keys.size() != node->end() / b - node->start / b) return fail(where + "key count");
    if (node != root && node->headed != (namespace_headers_ && IsNamespaceToken(path.front()))) {
      return fail(where + "namespace header flag");
    }
    if (!node->keys.empty()) {
      // Chained from the ancestors' keys, which are checked the same way: by induction from the
      // root, every stored key equals the key recomputed from scratch.
      std::vector<BlockKey> expect;
      const size_t first = node->start / b;
      keyer_.AppendKeysFrom(path, first, first > 0 ? LastKeyAtOrAbove(node->parent) : 0, &expect);
      if (expect != node->keys) return fail(where + "stored block keys differ from recomputed");
    }
    size += node->tokens.size();
    if (node->lock > 0) pinned += node->tokens.size();
    held += ReportedBlocks(node, node->start / b, node->keys.size());
  }
  if (in_lru != lru_.size()) return fail("LRU has extra entries");
  if (size != size_tokens_) return fail("size_tokens");
  if (pinned != pinned_tokens_) return fail("pinned_tokens");
  if (held != held_blocks_) return fail("held_blocks");
  if (nodes != node_count_) return fail("node_count");
  if (size_tokens_ > capacity_) return fail("over capacity");
  return OkStatus();
}

}  // namespace hearsay::prefix
