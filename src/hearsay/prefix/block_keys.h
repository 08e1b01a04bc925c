// BlockKeyer: turns a prompt into its chain of block keys, the currency of the prefix cache.
//
// A prompt is a sequence of token ids, or raw bytes where no tokenizer is used. It is cut into
// fixed-size blocks (default 16 tokens, or 64 bytes); only full blocks get keys, so a partial last
// block is ignored. Block i's key covers blocks 0..i: holding k_i means holding the whole prefix
// through block i, and equal keys mean equal prefixes (up to 64-bit collisions).
//
// Construction. From (cluster secret, model, tenant) we derive, with libsodium's keyed BLAKE2b
// (crypto_generichash):
//   master    = BLAKE2b-256(key = cluster secret, "hearsay/block-keys/v1" | len|model | len|tenant)
//   S         = 192 bytes: BLAKE2b-512(key = master, "xxh3-secret" | i), i = 0, 1, 2
//   seed_tok  = BLAKE2b(key = master, "token-chain" | tokens_per_block), first 8 bytes
//   seed_byte = BLAKE2b(key = master, "byte-chain" | bytes_per_block), first 8 bytes
// and then, with k_{-1} = seed_tok (or seed_byte in bytes mode):
//   k_i = XXH3_64bits_withSecret(LE64(k_{i-1}) | block_i, S)
// Tokens are hashed as little-endian uint32 (on little-endian hosts, straight from memory).
//
// Why not XXH3_64bits_withSecretandSeed(block_i, S, seed = k_{i-1})? In xxHash 0.8.1 that
// function uses the *public default* secret for inputs <= 240 bytes (only the 64-bit seed is
// secret), and *ignores the seed* for longer inputs, so with blocks of >= 61 tokens the chain
// would silently not chain at all. Putting k_{i-1} in the input and hashing with the custom
// secret S chains at every block size and mixes every input byte with secret bytes.
//
// Properties:
//   - Namespace separation: model, tenant and secret all feed `master` (length-prefixed, so
//     ("ab", "c") != ("a", "bc")); different namespaces give unrelated S and seeds.
//   - Token and byte chains, and different block sizes, use different seeds.
//   - Secrecy: without S and the seed, a key is meant to reveal nothing about the text. Be aware
//     that XXH3 keyed by a secret is NOT a proven PRF: it is a fast non-cryptographic hash, not
//     designed to resist cryptanalysis. We know of no practical attack that recovers text or S
//     from keys, but there is no proof either; treat this as defence in depth. The cluster secret
//     itself is protected by BLAKE2b: S and the seeds reveal nothing about it. Keys also travel
//     only inside authenticated, encrypted gossip.
//   - Collisions: 64-bit keys; a cache of n blocks sees a false match with probability ~n^2/2^65.
//
// Secrets longer than 64 bytes (BLAKE2b's key limit) are first hashed to 32 bytes with BLAKE2b.
//
// Speed: the chain is serial, and each 64-byte block takes XXH3's scalar short-input path, so
// keys run at ~45% of one bare (SIMD) XXH3 pass over the same bytes; see bench/prefix_bench.cc.
// Block sizes of 64, 128 and 256 bytes (16, 32, 64 tokens) take a specialized path.
//
// We do not call sodium_init(): it stirs libsodium's OS random generator, which core code must
// not touch, and crypto_generichash is correct (reference BLAKE2b) without it.
//
// A BlockKeyer holds secret material (S and the seeds): never log or send it. It is immutable
// after Create; const methods are safe to call from many threads. Copies are cheap (~220 bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::prefix {

// A token id as produced by a tokenizer. Shared by every prefix-cache structure.
using TokenId = uint32_t;

struct BlockKeyerOptions {
  // Tokens per block in token mode; must be in [1, BlockKeyer::kMaxBlockSize].
  size_t tokens_per_block = 16;
  // Bytes per block in bytes mode (no tokenizer); must be in [1, BlockKeyer::kMaxBlockSize].
  size_t bytes_per_block = 64;
};

class BlockKeyer {
 public:
  // The shortest cluster secret accepted.
  static constexpr size_t kMinSecretBytes = 16;
  // The largest block size accepted, in tokens or bytes.
  static constexpr size_t kMaxBlockSize = size_t{1} << 20;
  // Size of the derived XXH3 secret (XXH3_SECRET_DEFAULT_SIZE; >= XXH3_SECRET_SIZE_MIN).
  static constexpr size_t kXxhSecretBytes = 192;

  // Derives a keyer for one namespace. Errors (INVALID_ARGUMENT): a secret shorter than
  // kMinSecretBytes, or a block size of 0 or above kMaxBlockSize. Model and tenant may be empty.
  [[nodiscard]] static Result<BlockKeyer> Create(std::span<const uint8_t> cluster_secret,
                                                 std::string_view model, std::string_view tenant,
                                                 BlockKeyerOptions options = {});
  // Same, with the secret given as a string of bytes.
  [[nodiscard]] static Result<BlockKeyer> Create(std::string_view cluster_secret,
                                                 std::string_view model, std::string_view tenant,
                                                 BlockKeyerOptions options = {});

  size_t tokens_per_block() const { return tokens_per_block_; }
  size_t bytes_per_block() const { return bytes_per_block_; }
  // The number of full token blocks in a prompt of `num_tokens` tokens.
  size_t FullBlocks(size_t num_tokens) const { return num_tokens / tokens_per_block_; }

  // Appends the keys of every full token block of `tokens` to `out`. Does not allocate beyond
  // growing `out`. A prompt shorter than one block appends nothing.
  void AppendKeys(std::span<const TokenId> tokens, std::vector<BlockKey>* out) const;
  // Appends the keys of full token blocks first_block, first_block+1, ... of `tokens` (the whole
  // prompt from token 0), given `prev_key`, the key of block first_block-1 (ignored when
  // first_block is 0). Lets a caller that already holds a prefix's keys extend the chain.
  void AppendKeysFrom(std::span<const TokenId> tokens, size_t first_block, BlockKey prev_key,
                      std::vector<BlockKey>* out) const;
  // The keys of every full token block of `tokens`.
  std::vector<BlockKey> Keys(std::span<const TokenId> tokens) const;

  // The id of the cache namespace (tenant, salt) under this keyer (docs/security.md, "Tenants"):
  // 0 for ("", ""), the shared namespace; otherwise a nonzero 64-bit hash of both, keyed with
  // this keyer's secret, so the same names give other ids in another cluster or model.
  uint64_t NamespaceId(std::string_view tenant, std::string_view salt) const;

  // Bytes mode: appends the keys of every full byte block of `bytes` to `out`.
  void AppendByteKeys(std::span<const uint8_t> bytes, std::vector<BlockKey>* out) const;
  // Bytes mode: the keys of every full byte block of `bytes`.
  std::vector<BlockKey> ByteKeys(std::span<const uint8_t> bytes) const;
  // Bytes mode, for text: the keys of every full byte block of `text`.
  std::vector<BlockKey> ByteKeys(std::string_view text) const;

 private:
  BlockKeyer() = default;

  // One chain step: hash of LE64(prev) | block bytes under secret_.
  BlockKey ChainStep(BlockKey prev, const uint8_t* block, size_t len) const;
  BlockKey TokenChainStep(BlockKey prev, const TokenId* block) const;
  // Appends the keys of `blocks` consecutive blocks of `block_len` bytes, chained from `key`.
  void ChainBytes(BlockKey key, const uint8_t* data, size_t block_len, size_t blocks,
                  std::vector<BlockKey>* out) const;

  std::array<uint8_t, kXxhSecretBytes> secret_{};
  BlockKey token_seed_ = 0;
  BlockKey byte_seed_ = 0;
  size_t tokens_per_block_ = 16;
  size_t bytes_per_block_ = 64;
};

// Cache namespaces. A request of namespace `ns` != 0 is keyed, routed and cached as if its prompt
// began with NamespaceBlock(ns, tokens_per_block): one block of token ids at or above 2^31
// (IsNamespaceToken), which no tokenizer produces and the API does not accept, derived from `ns`
// alone. Every block key of the prompt then chains from that block's key, so two namespaces never
// share a key (up to 64-bit collisions), and an engine that caches token prefixes (the simulated
// one) keeps them apart too. The namespace block is a header of the chain, not a block of the
// prompt: its key is never a cache event nor routed on, and the prompt's first block has index 0
// in every namespace, so landmarks (every stride-th block) fall on the same prompt blocks as for
// namespace 0. Namespace 0 (the shared one) has no such block: keys are those of the prompt itself.
std::vector<TokenId> NamespaceBlock(uint64_t ns, size_t tokens);

// True for the token ids NamespaceBlock uses (bit 31 set), which no prompt holds.
constexpr bool IsNamespaceToken(TokenId t) { return (t & 0x80000000u) != 0; }

// The keys of `prompt`'s full blocks in namespace `ns`, appended to `out`, one per full block of
// `prompt`: for ns != 0 they are the keys blocks 1.. of NamespaceBlock(ns) | prompt have (the
// namespace block's own key, which chains them, is not appended).
void AppendNamespacedKeys(const BlockKeyer& keyer, uint64_t ns, std::span<const TokenId> prompt,
                          std::vector<BlockKey>* out);

}  // namespace hearsay::prefix
