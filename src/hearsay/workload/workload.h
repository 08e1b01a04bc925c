// Workload: a stream of client requests, pulled one at a time in arrival order; the simulator
// replays it in virtual time and the load generator sends it over HTTP.
//
// A Workload is a generator. Next() hands out the next Request (owned by the caller from then on)
// or std::nullopt once the workload is exhausted; the simulator pulls lazily, so a generator
// never has to hold more than the requests it is still building (a trace's compact records, a
// chat's open conversations). All randomness comes from a hearsay::Rng the caller seeds, so the
// same options and seed give the identical request stream on every platform.
//
// Prompts are token id sequences. Content is synthesized deterministically from "content ids"
// (a trace block id, an MMLU subject, a question number) by TokenStream, so equal content ids
// give equal tokens and the cache-sharing structure of a workload is exact by construction.
// Token ids below kFirstContentToken are reserved for structural markers (subject and variant
// tags) that make "these two prompts differ here" hold exactly rather than with high probability.
//
// This file also holds RenderAsText, which turns tokens into text for the daemon's load generator
// (one word per token), and EntryAssigner, which picks the node a request enters at.
//
// Thread-safety: none. A Workload and its Rng belong to one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/prefix/block_keys.h"

namespace hearsay::workload {

// A prompt token id: the prefix module's, so prompts feed BlockKeyer and RadixTree directly.
using TokenId = prefix::TokenId;

// Token ids [0, kFirstContentToken) are structural markers; synthesized content never uses them.
inline constexpr TokenId kFirstContentToken = 1024;
// Default vocabulary size: content tokens are drawn from [kFirstContentToken, kDefaultVocab).
inline constexpr uint32_t kDefaultVocab = 32000;

// One client request, as a workload emits it.
// Invariants: ids are 0, 1, 2, ... in emission order; arrival times never decrease along a
// stream; shareable_prefix_tokens <= prompt.size().
struct Request {
  // Position in the stream (0-based). Unique within one workload.
  uint64_t id = 0;
  // Arrival time, measured from the start of the workload.
  Duration arrival{0};
  // Index of the node the client sends this request to, in [0, node count).
  uint32_t entry_node = 0;
  // The client that sent it (sticky entry maps a client to one node).
  uint64_t client = 0;
  std::vector<TokenId> prompt;
  // Tokens the engine is asked to generate (max_tokens).
  uint32_t output_tokens = 0;
  // The answer's tokens when the workload knows them (chat: the answer a later turn's prompt
  // repeats), passed to the engine as PeerRequest::scripted_output; empty otherwise.
  std::vector<TokenId> scripted_output;
  // Leading prompt tokens that other requests share by construction, for analysis (never for
  // routing): MMLU, header + subject shots; chat, the previous turn's prompt and answer (the
  // system prompt on turn 0); trace, the leading blocks an earlier request already carried
  // (what an infinite cache would hit).
  uint32_t shareable_prefix_tokens = 0;

  // The model it asks for: an index into the run's models (ModelMixWorkload); 0 when the
  // workload serves one model.
  uint32_t model = 0;

  // Analysis metadata; -1 where the workload has no such notion.
  int32_t subject = -1;       // MMLU subject index (see MmluSubjects()).
  int32_t variant = -1;       // MMLU prefix variant, or chat system prompt index.
  int64_t conversation = -1;  // Chat conversation id.
  int32_t turn = -1;          // Chat turn within its conversation, from 0.
};

// The generator interface shared by every workload.
class Workload {
 public:
  virtual ~Workload() = default;

  // The next request in arrival order, or std::nullopt when the workload is exhausted (and on
  // every later call).
  virtual std::optional<Request> Next() = 0;
};

// Appends `count` tokens of the deterministic content stream `content_id` to `out`, starting at
// position `offset` of that stream. Token values lie in [kFirstContentToken, vocab). The same
// (content_id, position, vocab) always gives the same token; different content ids give
// independent streams (two 16-token windows of different streams collide with probability
// ~vocab^-16). `vocab` must exceed kFirstContentToken (smaller values are clamped up).
void AppendContentTokens(uint64_t content_id, uint64_t offset, size_t count, uint32_t vocab,
                         std::vector<TokenId>& out);

// x rounded to the nearest integer and clamped to [lo, hi] (NaN gives lo): a drawn length.
uint32_t ClampTokens(double x, uint32_t lo, uint32_t hi);

// A 64-bit mix of `a` and `b` (SplitMix64 finalizer), for deriving content ids from structure.
uint64_t MixIds(uint64_t a, uint64_t b);

// Renders tokens as text for the daemon's load generator: one lowercase word per token, single
// spaces between words. Each token maps to its own word (bijective base-26 "a".."z","aa",...), so
// equal token prefixes give equal text prefixes and splitting on whitespace gives back exactly
// one word per token.
std::string RenderAsText(const std::vector<TokenId>& tokens);

// The inverse of RenderAsText: splits on ASCII whitespace and decodes each word. Fails on a word
// that RenderAsText cannot produce (a non a-z character, or a value above UINT32_MAX).
Result<std::vector<TokenId>> ParseRenderedText(std::string_view text);

// How requests pick their entry node.
enum class EntryMode {
  // Each request enters at a node drawn uniformly at random.
  kUniform,
  // Each client always enters at the same node (a seeded hash of the client id).
  kSticky,
};

struct EntryOptions {
  EntryMode mode = EntryMode::kUniform;
  // Number of nodes; must be >= 1.
  uint32_t nodes = 1;
  // Number of distinct clients the workload draws requests from; must be >= 1.
  uint32_t clients = 64;
};

// Validates EntryOptions: nodes and clients must be >= 1.
Status ValidateEntryOptions(const EntryOptions& options);

// Picks entry nodes per EntryOptions. Owns its Rng.
class EntryAssigner {
 public:
  // `options` must be valid (see ValidateEntryOptions; invalid counts are clamped to 1).
  EntryAssigner(const EntryOptions& options, Rng rng);

  // A client id in [0, clients), uniformly.
  uint64_t DrawClient();
  // The entry node for a request from `client`: uniform per request, or fixed per client.
  uint32_t NodeFor(uint64_t client);

 private:
  EntryOptions options_;
  Rng rng_;
  uint64_t sticky_salt_;
};

}  // namespace hearsay::workload
