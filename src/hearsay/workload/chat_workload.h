// ChatWorkload: multi-turn conversations whose prompts grow turn by turn.
//
// A conversation picks one of `system_prompts` shared system prompts (uniform, or Zipf), then
// runs a number of turns:
//   turn 0 prompt      = system prompt + user message 0
//   turn t + 1 prompt  = turn t prompt + turn t answer (its output_tokens) + user message t + 1
// so every turn's prompt extends the previous one exactly, and the answer tokens are those the
// simulated engine "generated" (content synthesized from the conversation and turn). The gap
// from one turn's arrival to the next is think_min + Exponential(think_mean); it stands for the
// answer's latency plus the user's think time, so keep it above the expected response time.
// A conversation ends after its drawn number of turns, or earlier when the next prompt would
// exceed max_prompt_tokens (a context window).
//
// Conversations start by an ArrivalProcess at rate_per_s / MeanTurns(), so that
// arrivals.rate_per_s is (approximately, before early context-window ends) the request rate,
// as in every other workload. Turns of all open conversations interleave in time order; ties
// break by conversation id, so the stream is deterministic.
//
// Thread-safety: none; owns its Rng streams.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/workload/arrivals.h"
#include "hearsay/workload/workload.h"

namespace hearsay::workload {

struct ChatOptions {
  // Conversations to start; the stream ends when the last one finishes. Must be >= 1.
  uint64_t num_conversations = 1000;

  // Distinct system prompts, shared by many conversations; popularity Zipf(system_zipf_s)
  // (0 is uniform). Lengths lognormal: median system_median_tokens, clipped to [min, max].
  uint32_t system_prompts = 8;
  double system_zipf_s = 0.0;
  double system_median_tokens = 400;
  double system_sigma = 0.5;
  uint32_t system_min_tokens = 32;
  uint32_t system_max_tokens = 4000;

  // Turns per conversation, uniform in [min_turns, max_turns].
  uint32_t min_turns = 1;
  uint32_t max_turns = 10;

  // User messages and answers: lognormal with the given mean, clipped.
  double user_mean_tokens = 80;
  double user_sigma = 0.8;
  uint32_t user_min_tokens = 4;
  uint32_t user_max_tokens = 2000;
  double answer_mean_tokens = 200;
  double answer_sigma = 0.7;
  uint32_t answer_min_tokens = 1;
  uint32_t answer_max_tokens = 2000;

  // A conversation ends before a turn whose prompt would be longer. Must be at least
  // system_max_tokens + user_max_tokens, so turn 0 always fits.
  uint32_t max_prompt_tokens = 32768;

  // Gap between a conversation's consecutive turns: think_min + Exponential(think_mean).
  Duration think_min = FromSeconds(2);
  Duration think_mean = FromSeconds(15);

  // Requests/s on average; conversations start at rate_per_s / MeanTurns().
  ArrivalOptions arrivals;
  // Each conversation has one client, drawn when it starts.
  EntryOptions entry;
  uint32_t vocab = kDefaultVocab;

  // Mean turns per conversation before context-window ends: (min_turns + max_turns) / 2.
  double MeanTurns() const { return 0.5 * (static_cast<double>(min_turns) + max_turns); }
};

// OK if `options` is usable (counts >= 1, min <= max, positive means, max_prompt fits turn 0).
Status ValidateChatOptions(const ChatOptions& options);

// Invariants: every open conversation is in pending_ exactly once, keyed by its next turn's
// arrival; started_ <= num_conversations; next_start_ is the start of conversation started_.
class ChatWorkload final : public Workload {
 public:
  // Validates `options`; draws the system prompts from `rng` up front.
  static Result<ChatWorkload> Create(const ChatOptions& options, Rng rng);

  std::optional<Request> Next() override;

  // System prompt i (empty if i is out of range).
  std::span<const TokenId> SystemPrompt(uint32_t i) const;

 private:
  struct Conversation {
    int64_t id = 0;
    uint64_t client = 0;
    uint32_t entry_node = 0;
    uint32_t system = 0;
    uint32_t turns = 0;      // Drawn number of turns.
    uint32_t next_turn = 0;  // The turn Next() emits next.
    uint32_t last_answer = 0;
    Duration next_arrival{0};
    std::vector<TokenId> prompt;  // The last emitted prompt.
  };
  // Heap order for pending_: earliest next arrival on top, ties to the lower id.
  struct Later {
    bool operator()(const Conversation& a, const Conversation& b) const {
      if (a.next_arrival != b.next_arrival) return a.next_arrival > b.next_arrival;
      return a.id > b.id;
    }
  };

  ChatWorkload(const ChatOptions& options, Rng rng, ArrivalProcess starts);
  uint32_t DrawLogNormal(double mean, double sigma, uint32_t lo, uint32_t hi);
  // Builds the request for c's next turn and advances c (prompt, next_turn, next_arrival), or
  // returns nullopt if that turn's prompt would exceed max_prompt_tokens (c is then over).
  std::optional<Request> TryEmit(Conversation& c);

  ChatOptions options_;
  Rng rng_;
  ArrivalProcess starts_;
  EntryAssigner entry_;
  ZipfSampler system_popularity_;
  std::vector<std::vector<TokenId>> system_prompts_;
  // Open conversations, a binary heap under Later (std::push_heap / std::pop_heap).
  std::vector<Conversation> pending_;
  uint64_t started_ = 0;
  Duration next_start_{0};
  uint64_t next_id_ = 0;
};

}  // namespace hearsay::workload
