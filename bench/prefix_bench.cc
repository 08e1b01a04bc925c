// Block keys and the radix tree. BM_BlockKeys and BM_Xxh3Baseline hash the same bytes in the same
// run, so their bytes_per_second compare directly (target: keys >= 80% of bare XXH3).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

// The packaged library's XXH3, captured before XXH_INLINE_ALL renames the symbol (for context).
extern "C" uint64_t XXH3_64bits(const void* data, size_t len);
namespace {
uint64_t (*const kLibraryXxh3)(const void*, size_t) = &XXH3_64bits;
}  // namespace

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <memory>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/prefix/radix_tree.h"

namespace hearsay::prefix {
namespace {

BlockKeyer BenchKeyer() {
  return *BlockKeyer::Create("bench-cluster-secret-0123456789", "bench-model", "bench-tenant");
}

std::vector<TokenId> RandomTokens(Rng& rng, size_t n) {
  std::vector<TokenId> tokens(n);
  for (auto& t : tokens) t = static_cast<TokenId>(rng.Below(128000));
  return tokens;
}

void BM_BlockKeys(benchmark::State& state) {
  const BlockKeyer keyer = BenchKeyer();
  Rng rng(1);
  const auto tokens = RandomTokens(rng, static_cast<size_t>(state.range(0)));
  std::vector<BlockKey> keys;
  keys.reserve(tokens.size() / keyer.tokens_per_block());
  for (auto _ : state) {
    keys.clear();
    keyer.AppendKeys(tokens, &keys);
    benchmark::DoNotOptimize(keys.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(tokens.size() * sizeof(TokenId)));
}
BENCHMARK(BM_BlockKeys)->Arg(8192);

// One bare XXH3 pass over the bytes BM_BlockKeys hashes: the same header-inlined XXH3 code, built
// with the same flags as block_keys.cc (the packaged libxxhash.so is about 2x slower on 32 KiB).
void BM_Xxh3Baseline(benchmark::State& state) {
  Rng rng(1);
  const auto tokens = RandomTokens(rng, static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(XXH3_64bits(tokens.data(), tokens.size() * sizeof(TokenId)));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(tokens.size() * sizeof(TokenId)));
}
BENCHMARK(BM_Xxh3Baseline)->Arg(8192);

// For context only: the same pass through the packaged libxxhash.so.
void BM_Xxh3Library(benchmark::State& state) {
  Rng rng(1);
  const auto tokens = RandomTokens(rng, static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(kLibraryXxh3(tokens.data(), tokens.size() * sizeof(TokenId)));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(tokens.size() * sizeof(TokenId)));
}
BENCHMARK(BM_Xxh3Library)->Arg(8192);

// Prompts that share a `shared`-token prefix, each followed by `unique` tokens of its own.
std::vector<std::vector<TokenId>> Prompts(size_t count, size_t shared, size_t unique) {
  Rng rng(7);
  const auto system = RandomTokens(rng, shared);
  std::vector<std::vector<TokenId>> prompts(count, system);
  for (auto& p : prompts) {
    const auto tail = RandomTokens(rng, unique);
    p.insert(p.end(), tail.begin(), tail.end());
  }
  return prompts;
}

// Insert of a 2048-token prompt whose first 1024 tokens are cached (64 new blocks to key); no
// eviction (the tree is rebuilt, untimed, every 512 inserts).
void BM_RadixInsert(benchmark::State& state) {
  const BlockKeyer keyer = BenchKeyer();
  const auto prompts = Prompts(512, 1024, 1024);
  std::vector<BlockEvent> events;
  events.reserve(1024);
  auto tree = std::make_unique<RadixTree>(keyer, RadixTreeOptions{.capacity_tokens = 1 << 22});
  size_t next = 0;
  uint64_t tick = 0;
  for (auto _ : state) {
    if (next == prompts.size()) {
      state.PauseTiming();
      tree = std::make_unique<RadixTree>(keyer, RadixTreeOptions{.capacity_tokens = 1 << 22});
      next = 0;
      state.ResumeTiming();
    }
    events.clear();
    benchmark::DoNotOptimize(tree->Insert(prompts[next++], ++tick, &events));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RadixInsert);

// Match (with LRU refresh) of a fully cached prompt of N tokens in a tree of 64 such prompts
// sharing a 1024-token prefix.
void BM_RadixMatch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto prompts = Prompts(64, 1024, n - 1024);
  RadixTree tree(BenchKeyer(), {.capacity_tokens = 1 << 22});
  uint64_t tick = 0;
  for (const auto& p : prompts) (void)tree.Insert(p, ++tick, nullptr);
  size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tree.Match(prompts[next], ++tick));
    next = (next + 1) % prompts.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(TokenId)));
}
BENCHMARK(BM_RadixMatch)->Arg(8192);

// Evict(1024) from a full tree of 256 LRU leaves of 1024 tokens (64 blocks each): one leaf and its
// 64 kRemoved events per call. The tree is refilled, untimed, when empty.
void BM_RadixEvict(benchmark::State& state) {
  const auto prompts = Prompts(256, 0, 1024);
  RadixTree tree(BenchKeyer(), {.capacity_tokens = 256 * 1024});
  std::vector<BlockEvent> events;
  events.reserve(256 * 64);
  uint64_t tick = 0;
  auto fill = [&] {
    events.clear();
    for (const auto& p : prompts) (void)tree.Insert(p, ++tick, &events);
  };
  fill();
  for (auto _ : state) {
    if (tree.size_tokens() == 0) {
      state.PauseTiming();
      fill();
      state.ResumeTiming();
    }
    events.clear();
    benchmark::DoNotOptimize(tree.Evict(1024, &events));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RadixEvict);

}  // namespace
}  // namespace hearsay::prefix
