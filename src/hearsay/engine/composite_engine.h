// CompositeEngine: several engines behind one node, seen by the node as one engine::Engine.
//
// A node may front several engines (the daemon's `[[engine]]` entries, docs/daemon.md). The core
// resolves each request's model and adapter (EngineRequest::model, ::adapter) against the node's
// service; this engine sends the request to the engine serving that model. Two engines may serve
// one model (replicas with equal settings): the request goes to the one holding more of its
// prompt in cache, then the less loaded one, then the first. A request with no model (a node
// without a service) goes to the first engine.
//
// Every callback of a child reaches the observer the request was submitted with; Cancel() reaches
// the child that holds the request. Cache events and snapshots are the children's, concatenated:
// their keys already carry each request's namespace (model, adapter, tenant), so the engines'
// caches never share a key and the node's one cache summary holds them all.
//
// Load is summed (queues, running requests, KV, backlog), which is the weakness of a node with
// several engines: the node gossips one load record, so peers price the node as one engine with
// the sum of the queues, not the queue of the engine a request would reach. The speed is the mean
// of the children's measured speeds, and the estimated queue wait the longest.
//
// Ownership: owns the child engines; observers are borrowed as for any engine.
// Thread-safety: none (the core's thread, as every engine).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"

namespace hearsay::engine {

class CompositeEngine final : public Engine, private EngineObserver {
 public:
  // One child and the canonical model names it serves.
  struct Child {
    std::unique_ptr<Engine> engine;
    std::vector<std::string> models;
  };

  // INVALID_ARGUMENT without children or with a null engine.
  static Result<std::unique_ptr<CompositeEngine>> Create(std::vector<Child> children);

  // Replaces the models child `index` serves (what its engine now lists); index < size().
  void SetModels(size_t index, std::vector<std::string> models);

  size_t size() const { return children_.size(); }
  Engine& child(size_t index) { return *children_.at(index).engine; }
  const Engine& child(size_t index) const { return *children_.at(index).engine; }
  const std::vector<std::string>& models(size_t index) const { return children_.at(index).models; }
  // The child request `id` went to, or size() when it is not live.
  size_t ChildOf(RequestId id) const;

  // Engine. Submit() returns NOT_FOUND when no child serves the request's model.
  Status Submit(EngineRequest request, EngineObserver* observer) override;
  bool Cancel(RequestId id) override;
  EngineLoad Load() const override;
  size_t CachedPrefixTokens(std::span<const TokenId> prompt) const override;
  size_t CachedPrefixTokens(std::span<const TokenId> prompt, uint64_t ns) const override;
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override;
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override;

 private:
  explicit CompositeEngine(std::vector<Child> children) : children_(std::move(children)) {}

  // The child for `request`, or size() when none serves its model.
  size_t Pick(const EngineRequest& request) const;
  // The observer of a live request (null if not live); Release forgets the request.
  EngineObserver* ObserverOf(RequestId id) const;
  EngineObserver* Release(RequestId id);

  // EngineObserver: the children's callbacks, passed on.
  void OnAdmitted(RequestId id, const Admission& admission) override;
  void OnFirstToken(RequestId id, const FirstToken& first) override;
  void OnTokens(RequestId id, std::span<const TokenId> tokens) override;
  void OnText(RequestId id, std::string_view text) override;
  void OnComplete(RequestId id, const Usage& usage) override;
  void OnError(RequestId id, const Status& status) override;

  struct Live {
    size_t child = 0;
    EngineObserver* observer = nullptr;
  };
  std::vector<Child> children_;
  std::unordered_map<RequestId, Live> live_;
};

}  // namespace hearsay::engine
