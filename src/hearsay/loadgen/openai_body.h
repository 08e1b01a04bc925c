// OpenAI request bodies for the load generator: streaming completions and chat completions that
// ask for usage in the stream (stream_options.include_usage), so every response reports its
// prompt and cached token counts.
//
// ChatTranscript rebuilds a chat workload's conversation as messages: the simulator's chat
// requests are flat token sequences in which turn t + 1 extends turn t by the answer and a new
// user message, so the message boundaries follow from each request's shareable prefix. Sending
// real multi-turn messages keeps the rendered chat prompt of turn t a prefix of turn t + 1's,
// which is what a real chat client does and what prefix caching relies on.
//
// Thread-safety: functions are pure; a ChatTranscript belongs to one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hearsay/workload/workload.h"

namespace hearsay::loadgen {

enum class ApiKind {
  kCompletions,      // POST /v1/completions with "prompt"
  kChatCompletions,  // POST /v1/chat/completions with "messages"
};

// The request path of `kind`.
std::string_view ApiPath(ApiKind kind);

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// {"model", "prompt", "max_tokens", "stream": true, "stream_options": {"include_usage": true},
//  "temperature": 0}. max_tokens below 1 is sent as 1 (the API's minimum).
std::string RenderCompletionBody(std::string_view model, std::string_view prompt,
                                 uint32_t max_tokens);

// The same for chat, with "messages" instead of "prompt".
std::string RenderChatBody(std::string_view model, const std::vector<ChatMessage>& messages,
                           uint32_t max_tokens);

// Splits workload requests into chat messages.
// Invariants: cuts_[c] holds, for conversation c, the token offsets where its messages end so
// far (strictly increasing), and the last one is the length of its last prompt.
class ChatTranscript {
 public:
  // `max_turns`: the workload's largest turn count, so finished conversations are forgotten.
  explicit ChatTranscript(uint32_t max_turns) : max_turns_(max_turns) {}

  // The messages of `request`. A chat request (conversation >= 0) becomes system, user,
  // assistant, user, ...; any other request becomes one user message.
  std::vector<ChatMessage> Messages(const workload::Request& request);

  // Conversations currently remembered (for tests: finished ones are dropped).
  size_t open_conversations() const { return cuts_.size(); }

 private:
  uint32_t max_turns_;
  std::unordered_map<int64_t, std::vector<uint32_t>> cuts_;
};

}  // namespace hearsay::loadgen
