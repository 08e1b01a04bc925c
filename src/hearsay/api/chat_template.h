// The chat template: renders OpenAI chat `messages` to the one prompt string the engine sees.
//
// A ChatML-like template, deterministic and byte-exact:
//   <|im_start|>{role}\n{content}<|im_end|>\n      for each message, then
//   <|im_start|>assistant\n                         the generation prompt.
// Prefix property (what multi-turn prefix caching relies on): for a conversation C and any
// continuation D, RenderMessages(C) is a prefix of RenderMessages(C + D); and the prompt of one
// turn plus the assistant's answer, RenderChat(C) + answer + "<|im_end|>\n", is a prefix of
// RenderChat(C + [{assistant, answer}] + D). So the next turn's prompt starts with the cached one.
//
// Content is a string, or an array of parts {"type":"text","text":"..."} whose texts are joined
// without separator (so a string and the same text split into parts render the same). Other part
// types (images, audio, files) are refused with a 400 naming the part.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hearsay/api/api_error.h"

namespace hearsay::api {

struct ChatMessage {
  // One of kChatRoles.
  std::string role;
  std::string content;

  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

// The roles a message may have.
inline constexpr std::string_view kChatRoles[] = {"system", "user", "assistant", "tool",
                                                  "developer"};

inline constexpr std::string_view kImStart = "<|im_start|>";
inline constexpr std::string_view kImEnd = "<|im_end|>";
// What RenderChat appends after the messages: the assistant turn the engine completes.
inline constexpr std::string_view kGenerationPrompt = "<|im_start|>assistant\n";

// Appends one rendered message to `out`.
void AppendMessage(const ChatMessage& message, std::string* out);
// The messages rendered, without the generation prompt.
std::string RenderMessages(std::span<const ChatMessage> messages);
// The messages rendered, followed by the generation prompt: the engine's prompt.
std::string RenderChat(std::span<const ChatMessage> messages);

// Validates the JSON `messages` of a chat request: a non-empty array of objects, each with a
// `role` from kChatRoles and a `content` (string or text parts; null only for an assistant
// message, as with tool calls, rendering as empty). Errors are 400 with `param` naming the field,
// e.g. "messages[2].content[0].type".
std::variant<std::vector<ChatMessage>, ApiError> ParseMessages(const nlohmann::json& messages);

}  // namespace hearsay::api
