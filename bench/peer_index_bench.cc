// PeerIndex benchmarks: Match latency over many peers with realistic overlap, and event apply
// throughput. Fixtures are big (up to 1,024 peers x 100k blocks), so each is built once per
// process and shared by repetitions.
//
// Workload model (block size 16 tokens, so an 8,192-token prompt is 512 keys):
//   32 system prompts (16..64 blocks, Zipf popularity) are held by nearly every peer;
//   4,096 documents (32..160 blocks, each under one system prompt, Zipf popularity) are shared
//   by some peers; every conversation then has a unique tail (32..384 blocks). A peer holds
//   conversations until it holds 100k distinct blocks.
// Queries (a rotating pool of 256, each exactly 512 keys), one third each:
//   a follow-up of one of a peer's conversations (deep match on that peer),
//   a new conversation on a document (matches system prompt + document where held),
//   a new conversation on a system prompt only (shallow match almost everywhere).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/prefix/peer_index.h"

namespace hearsay::prefix {
namespace {

constexpr size_t kBlockTokens = 16;
constexpr size_t kBlocksPerPeer = 100'000;
constexpr size_t kSystemPrompts = 32;
constexpr size_t kDocuments = 4096;
constexpr size_t kQueries = 256;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Appends `n` chained keys after `keys` (or after the namespace root if empty).
void Extend(std::vector<BlockKey>& keys, uint64_t content_seed, size_t n) {
  BlockKey prev = keys.empty() ? 0x5eedULL : keys.back();
  for (size_t i = 0; i < n; ++i) {
    prev = Mix(prev ^ Mix(content_seed + i));
    keys.push_back(prev);
  }
}

NodeId PeerName(size_t p) {
  NodeId name = "peer-";
  name += std::to_string(p);
  return name;
}

class Workload {
 public:
  explicit Workload(uint64_t seed)
      : rng_(seed), sys_zipf_(kSystemPrompts, 1.0), doc_zipf_(kDocuments, 1.0) {
    for (size_t s = 0; s < kSystemPrompts; ++s) {
      std::vector<BlockKey> keys;
      Extend(keys, rng_.NextU64(), 16 + rng_.Below(49));
      systems_.push_back(std::move(keys));
    }
    for (size_t d = 0; d < kDocuments; ++d) {
      std::vector<BlockKey> keys = systems_[d % kSystemPrompts];
      Extend(keys, rng_.NextU64(), 32 + rng_.Below(129));
      documents_.push_back(std::move(keys));
    }
  }

  // A conversation's shared part: a document (70%) or only a system prompt.
  std::vector<BlockKey> SharedPrefix() {
    if (rng_.Bernoulli(0.7)) return documents_[doc_zipf_.Sample(rng_)];
    return systems_[sys_zipf_.Sample(rng_)];
  }
  std::vector<BlockKey> SystemPrefix() { return systems_[sys_zipf_.Sample(rng_)]; }
  // Appends a fresh unique tail of 32..384 blocks; returns where the tail starts.
  size_t AddTail(std::vector<BlockKey>& keys) {
    const size_t start = keys.size();
    Extend(keys, rng_.NextU64(), 32 + rng_.Below(353));
    return start;
  }
  Rng& rng() { return rng_; }

 private:
  Rng rng_;
  ZipfSampler sys_zipf_;
  ZipfSampler doc_zipf_;
  std::vector<std::vector<BlockKey>> systems_;
  std::vector<std::vector<BlockKey>> documents_;
};

struct Conversation {
  std::vector<BlockKey> keys;
  size_t tail_start;  // keys[tail_start..] are unique to this conversation
};

// Fills peer `name` with conversations until it holds `blocks` distinct blocks; returns them.
std::vector<Conversation> FillPeer(PeerIndex& index, Workload& w, const NodeId& name,
                                   size_t blocks) {
  std::vector<Conversation> convs;
  std::vector<BlockEvent> events;
  uint64_t held = 0;
  while (held < blocks) {
    Conversation c;
    c.keys = w.SharedPrefix();
    c.tail_start = w.AddTail(c.keys);
    events.clear();
    for (BlockKey k : c.keys) {
      events.push_back({BlockEvent::Kind::kAdded, k, static_cast<uint32_t>(events.size())});
    }
    index.ApplyEvents(name, 1, events).IgnoreError();
    held = *index.BlocksHeld(name);
    convs.push_back(std::move(c));
  }
  return convs;
}

// ---- Match ----

struct MatchFixture {
  size_t peers = 0;
  size_t blocks_per_peer = 0;
  std::unique_ptr<PeerIndex> index;
  std::vector<std::vector<BlockKey>> queries;
};

MatchFixture& GetMatchFixture(size_t peers, size_t prompt_blocks) {
  static MatchFixture fixture;
  if (fixture.peers == peers) return fixture;
  fixture = MatchFixture{};  // free the previous one first
  fixture.peers = peers;
  fixture.blocks_per_peer = kBlocksPerPeer;
  fixture.index = std::make_unique<PeerIndex>(PeerIndexOptions{.max_peers = 1024});
  Workload w(42);
  std::vector<Conversation> sample;  // one conversation per peer, for follow-ups
  for (size_t p = 0; p < peers; ++p) {
    const NodeId name = PeerName(p);
    fixture.index->ObservePeer(name, 1).status().IgnoreError();
    std::vector<Conversation> convs = FillPeer(*fixture.index, w, name, kBlocksPerPeer);
    sample.push_back(std::move(convs[w.rng().Below(convs.size())]));
  }
  for (size_t q = 0; q < kQueries; ++q) {
    std::vector<BlockKey> keys;
    switch (q % 3) {
      case 0:
        keys = sample[w.rng().Below(sample.size())].keys;
        break;
      case 1:
        keys = w.SharedPrefix();
        break;
      default:
        keys = w.SystemPrefix();
        break;
    }
    if (keys.size() > prompt_blocks) keys.resize(prompt_blocks);
    Extend(keys, w.rng().NextU64(), prompt_blocks - keys.size());
    fixture.queries.push_back(std::move(keys));
  }
  return fixture;
}

// Args: prompt tokens, peers.
void BM_PeerIndexMatch(benchmark::State& state) {
  const size_t prompt_blocks = static_cast<size_t>(state.range(0)) / kBlockTokens;
  const size_t peers = static_cast<size_t>(state.range(1));
  MatchFixture& f = GetMatchFixture(peers, prompt_blocks);
  std::vector<uint32_t> out(f.index->slot_limit());
  size_t q = 0;
  uint64_t deepest = 0;
  uint64_t matched_peers = 0;
  for (auto _ : state) {
    const std::vector<BlockKey>& chain = f.queries[q];
    q = (q + 1) % f.queries.size();
    f.index->Match(chain, out).IgnoreError();
    benchmark::DoNotOptimize(out.data());
    // Cheap bookkeeping for the counters; the same in every iteration.
    deepest += *std::max_element(out.begin(), out.end());
    matched_peers += static_cast<uint64_t>(
        std::count_if(out.begin(), out.end(), [](uint32_t m) { return m > 0; }));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["blocks_per_peer"] = static_cast<double>(f.blocks_per_peer);
  state.counters["distinct_keys"] = static_cast<double>(f.index->table_size());
  state.counters["table_MiB"] = static_cast<double>(f.index->MemoryBytes()) / (1 << 20);
  state.counters["avg_deepest"] = static_cast<double>(deepest) / n;
  state.counters["avg_peers_matched"] = static_cast<double>(matched_peers) / n;
}
BENCHMARK(BM_PeerIndexMatch)
    ->Args({8192, 4})
    ->Args({8192, 64})
    ->Args({8192, 1024})
    ->Unit(benchmark::kMicrosecond);

// ---- Apply ----

// 64 peers at 100k blocks each in steady state. The event pool is a closed cycle: phase A adds
// fresh conversation tails X_p and removes the peer's oldest tails Y_p; phase B adds Y_p back
// and removes X_p. Every event changes the index; the table size stays level.
struct ApplyFixture {
  std::unique_ptr<PeerIndex> index;
  std::vector<NodeId> names;
  struct Batch {
    size_t peer;
    std::vector<BlockEvent> events;
  };
  std::vector<Batch> batches;
  size_t next = 0;
};

constexpr size_t kApplyPeers = 64;
constexpr size_t kApplyBatch = 512;
constexpr size_t kChurnPerPeer = 4096;

ApplyFixture& GetApplyFixture() {
  static ApplyFixture* fixture = [] {
    auto* f = new ApplyFixture;
    f->index = std::make_unique<PeerIndex>(PeerIndexOptions{.max_peers = 1024});
    Workload w(7);
    std::vector<std::vector<BlockEvent>> phase_a(kApplyPeers);
    std::vector<std::vector<BlockEvent>> phase_b(kApplyPeers);
    for (size_t p = 0; p < kApplyPeers; ++p) {
      f->names.push_back(PeerName(p));
      f->index->ObservePeer(f->names[p], 1).status().IgnoreError();
      std::vector<Conversation> convs = FillPeer(*f->index, w, f->names[p], kBlocksPerPeer);
      std::vector<BlockKey> old_tails;  // Y_p: tails of the oldest conversations
      for (size_t c = 0; c < convs.size() && old_tails.size() < kChurnPerPeer; ++c) {
        old_tails.insert(old_tails.end(), convs[c].keys.begin() + convs[c].tail_start,
                         convs[c].keys.end());
      }
      old_tails.resize(kChurnPerPeer);
      std::vector<BlockKey> new_tails;  // X_p: fresh tails
      while (new_tails.size() < kChurnPerPeer) w.AddTail(new_tails);
      new_tails.resize(kChurnPerPeer);
      for (size_t i = 0; i < kChurnPerPeer; ++i) {
        const uint32_t at = static_cast<uint32_t>(i);
        phase_a[p].push_back({BlockEvent::Kind::kAdded, new_tails[i], at});
        phase_a[p].push_back({BlockEvent::Kind::kRemoved, old_tails[i], at});
        phase_b[p].push_back({BlockEvent::Kind::kAdded, old_tails[i], at});
        phase_b[p].push_back({BlockEvent::Kind::kRemoved, new_tails[i], at});
      }
    }
    for (auto* phase : {&phase_a, &phase_b}) {
      for (size_t start = 0; start < 2 * kChurnPerPeer; start += kApplyBatch) {
        for (size_t p = 0; p < kApplyPeers; ++p) {
          const auto& all = (*phase)[p];
          f->batches.push_back(
              {p, std::vector<BlockEvent>(all.begin() + start, all.begin() + start + kApplyBatch)});
        }
      }
    }
    return f;
  }();
  return *fixture;
}

void BM_PeerIndexApply(benchmark::State& state) {
  ApplyFixture& f = GetApplyFixture();
  for (auto _ : state) {
    const ApplyFixture::Batch& b = f.batches[f.next];
    f.next = (f.next + 1) % f.batches.size();
    f.index->ApplyEvents(f.names[b.peer], 1, b.events).IgnoreError();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kApplyBatch));
  state.counters["distinct_keys"] = static_cast<double>(f.index->table_size());
}
BENCHMARK(BM_PeerIndexApply)->Unit(benchmark::kMicrosecond);

// RemovePeer of peers holding 100k blocks each: O(1) plus a bounded sweep step per call. Each
// iteration removes all 64 peers (timed), then puts them back (untimed). Items are removals.
void BM_PeerIndexRemovePeer(benchmark::State& state) {
  ApplyFixture& f = GetApplyFixture();
  std::vector<std::vector<BlockKey>> keys;
  for (const NodeId& name : f.names) keys.push_back(*f.index->Keys(name));
  for (auto _ : state) {
    for (const NodeId& name : f.names) f.index->RemovePeer(name).IgnoreError();
    state.PauseTiming();
    for (size_t p = 0; p < f.names.size(); ++p) {
      f.index->ObservePeer(f.names[p], 1).status().IgnoreError();
      f.index->ApplySnapshot(f.names[p], 1, keys[p]).IgnoreError();
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.names.size()));
}
BENCHMARK(BM_PeerIndexRemovePeer)->Unit(benchmark::kMicrosecond)->Iterations(3);

}  // namespace
}  // namespace hearsay::prefix
