#include "hearsay/workload/chat_workload.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace hearsay::workload {
namespace {

constexpr uint64_t kSystemStream = 0x6368617473797374ULL;
constexpr uint64_t kUserStream = 0x6368617475736572ULL;
constexpr uint64_t kAnswerStream = 0x63686174616e7377ULL;

bool BadLogNormal(double mean, double sigma, uint32_t lo, uint32_t hi) {
  return !(mean > 0) || !std::isfinite(mean) || !(sigma >= 0) || !std::isfinite(sigma) || lo > hi;
}

}  // namespace

Status ValidateChatOptions(const ChatOptions& o) {
  if (o.num_conversations < 1) return InvalidArgumentError("chat: num_conversations must be >= 1");
  if (o.system_prompts < 1) return InvalidArgumentError("chat: system_prompts must be >= 1");
  if (!(o.system_zipf_s >= 0 && o.system_zipf_s <= 10)) {
    return InvalidArgumentError("chat: system_zipf_s must be in [0, 10]");
  }
  if (BadLogNormal(o.system_median_tokens, o.system_sigma, o.system_min_tokens,
                   o.system_max_tokens) ||
      BadLogNormal(o.user_mean_tokens, o.user_sigma, o.user_min_tokens, o.user_max_tokens) ||
      BadLogNormal(o.answer_mean_tokens, o.answer_sigma, o.answer_min_tokens,
                   o.answer_max_tokens)) {
    return InvalidArgumentError("chat: lengths need mean > 0, finite sigma >= 0, min <= max");
  }
  if (o.system_min_tokens < 1 || o.user_min_tokens < 1) {
    return InvalidArgumentError("chat: system and user messages need >= 1 token");
  }
  if (o.min_turns < 1 || o.min_turns > o.max_turns) {
    return InvalidArgumentError("chat: need 1 <= min_turns <= max_turns");
  }
  if (uint64_t{o.max_prompt_tokens} < uint64_t{o.system_max_tokens} + o.user_max_tokens) {
    return InvalidArgumentError("chat: max_prompt_tokens must fit system_max + user_max");
  }
  if (o.think_min < Duration::zero() || o.think_mean < Duration::zero()) {
    return InvalidArgumentError("chat: think times must be >= 0");
  }
  if (o.vocab <= kFirstContentToken) return InvalidArgumentError("chat: vocab too small");
  HEARSAY_RETURN_IF_ERROR(ValidateEntryOptions(o.entry));
  return ValidateArrivalOptions(o.arrivals);
}

Result<ChatWorkload> ChatWorkload::Create(const ChatOptions& options, Rng rng) {
  HEARSAY_RETURN_IF_ERROR(ValidateChatOptions(options));
  ArrivalOptions start_options = options.arrivals;
  start_options.rate_per_s /= options.MeanTurns();
  HEARSAY_ASSIGN_OR_RETURN(ArrivalProcess starts,
                           ArrivalProcess::Create(start_options, rng.Fork()));
  return ChatWorkload(options, rng, std::move(starts));
}

ChatWorkload::ChatWorkload(const ChatOptions& options, Rng rng, ArrivalProcess starts)
    : options_(options),
      rng_(rng),
      starts_(std::move(starts)),
      entry_(options.entry, rng_.Fork()),
      system_popularity_(options.system_prompts, options.system_zipf_s) {
  Rng system_rng = rng_.Fork();
  system_prompts_.resize(options_.system_prompts);
  const double mu = std::log(options_.system_median_tokens);
  for (uint32_t i = 0; i < options_.system_prompts; ++i) {
    const double x = system_rng.LogNormal(mu, options_.system_sigma);
    const uint32_t len = ClampTokens(x, options_.system_min_tokens, options_.system_max_tokens);
    AppendContentTokens(MixIds(kSystemStream, i), 0, len, options_.vocab, system_prompts_[i]);
  }
  next_start_ = starts_.Next();
}

std::span<const TokenId> ChatWorkload::SystemPrompt(uint32_t i) const {
  if (i >= system_prompts_.size()) return {};
  return system_prompts_[i];
}

uint32_t ChatWorkload::DrawLogNormal(double mean, double sigma, uint32_t lo, uint32_t hi) {
  // Lognormal mean is exp(mu + sigma^2 / 2).
  const double x = rng_.LogNormal(std::log(mean) - 0.5 * sigma * sigma, sigma);
  return ClampTokens(x, lo, hi);
}

std::optional<Request> ChatWorkload::TryEmit(Conversation& c) {
  const uint32_t turn = c.next_turn;
  const uint32_t user = DrawLogNormal(options_.user_mean_tokens, options_.user_sigma,
                                      options_.user_min_tokens, options_.user_max_tokens);
  const uint64_t turn_content = MixIds(static_cast<uint64_t>(c.id), turn);
  uint32_t shareable;
  if (turn == 0) {
    c.prompt = system_prompts_[c.system];
    shareable = static_cast<uint32_t>(c.prompt.size());
  } else {
    const uint64_t want = uint64_t{c.prompt.size()} + c.last_answer + user;
    if (want > options_.max_prompt_tokens) return std::nullopt;
    const uint64_t answer_content = MixIds(static_cast<uint64_t>(c.id), turn - 1);
    AppendContentTokens(MixIds(kAnswerStream, answer_content), 0, c.last_answer, options_.vocab,
                        c.prompt);
    shareable = static_cast<uint32_t>(c.prompt.size());
  }
  AppendContentTokens(MixIds(kUserStream, turn_content), 0, user, options_.vocab, c.prompt);

  Request r;
  r.id = next_id_++;
  r.arrival = c.next_arrival;
  r.entry_node = c.entry_node;
  r.client = c.client;
  r.prompt = c.prompt;
  r.output_tokens = DrawLogNormal(options_.answer_mean_tokens, options_.answer_sigma,
                                  options_.answer_min_tokens, options_.answer_max_tokens);
  // The engine answers with exactly the tokens the next turn's prompt repeats, so that turn can
  // hit the answer in the cache of whichever engine served this one.
  AppendContentTokens(MixIds(kAnswerStream, turn_content), 0, r.output_tokens, options_.vocab,
                      r.scripted_output);
  r.shareable_prefix_tokens = shareable;
  r.variant = static_cast<int32_t>(c.system);
  r.conversation = c.id;
  r.turn = static_cast<int32_t>(turn);

  c.last_answer = r.output_tokens;
  ++c.next_turn;
  c.next_arrival +=
      options_.think_min + FromSeconds(rng_.Exponential(ToSeconds(options_.think_mean)));
  return r;
}

std::optional<Request> ChatWorkload::Next() {
  while (true) {
    const bool can_start = started_ < options_.num_conversations;
    if (!can_start && pending_.empty()) return std::nullopt;
    Conversation c;
    if (can_start && (pending_.empty() || next_start_ <= pending_.front().next_arrival)) {
      c.id = static_cast<int64_t>(started_++);
      c.client = entry_.DrawClient();
      c.entry_node = entry_.NodeFor(c.client);
      c.system = static_cast<uint32_t>(system_popularity_.Sample(rng_));
      c.turns = static_cast<uint32_t>(rng_.UniformInt(options_.min_turns, options_.max_turns));
      c.next_arrival = next_start_;
      if (started_ < options_.num_conversations) next_start_ = starts_.Next();
    } else {
      std::pop_heap(pending_.begin(), pending_.end(), Later());
      c = std::move(pending_.back());
      pending_.pop_back();
    }
    std::optional<Request> r = TryEmit(c);
    if (!r.has_value()) continue;  // Context window full: the conversation is over.
    if (c.next_turn < c.turns) {
      pending_.push_back(std::move(c));
      std::push_heap(pending_.begin(), pending_.end(), Later());
    }
    return r;
  }
}

}  // namespace hearsay::workload
