// Model routing: how a node names the model a request is for, who may serve it, and the cache
// namespace its block keys live in (pure functions over gossip::Service; used by node::Node).
//
// A request names a model by its canonical name, an alias, or a LoRA adapter's name; it resolves
// to a ModelTarget: the canonical model, the adapter (empty for the base model) and the two
// things a model's cache keys depend on, the tokenizer fingerprint and the block size. A member
// serves a target only if one of its engines has that model, that adapter, and the same
// fingerprint and block size: two members that claim one model name with different tokenizers or
// block sizes never serve each other's requests (a service conflict, which the node reports).
//
// Thread-safety: pure functions on plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/gossip/service.h"

namespace hearsay::node {

struct ModelTarget {
  std::string model;    // canonical name
  std::string adapter;  // LoRA adapter; empty: the base model
  uint64_t tokenizer_fingerprint = 0;
  uint32_t block_tokens = 0;
  friend bool operator==(const ModelTarget&, const ModelTarget&) = default;
};

// What `name` means to `service`: its model by canonical name, then by alias, then an adapter
// of one of its models; nullopt if it serves nothing of that name. An empty name is the
// service's first model.
std::optional<ModelTarget> ResolveIn(const gossip::Service& service, std::string_view name);

// True if one engine of `service` serves `target` (model, adapter, fingerprint and block size).
bool ServesTarget(const gossip::Service& service, const ModelTarget& target);

// True if `service` has an engine for target.model whose fingerprint or block size differs from
// target's (it claims the model but its keys would not agree).
bool ConflictsWith(const gossip::Service& service, const ModelTarget& target);

// The cache namespace of a request of namespace `ns` (0: shared) for `target`: a nonzero id
// that differs (up to 64-bit collisions) whenever ns, the model, the adapter, the fingerprint or
// the block size differs, so two models never share a block key whatever the operator set.
uint64_t ModelNamespace(uint64_t ns, const ModelTarget& target);

// `name` fit for an error message: at most 256 bytes, non-printable bytes as '?'.
std::string PrintableModelName(std::string_view name);

}  // namespace hearsay::node
