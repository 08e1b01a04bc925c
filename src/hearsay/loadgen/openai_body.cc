#include "hearsay/loadgen/openai_body.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

namespace hearsay::loadgen {

std::string_view ApiPath(ApiKind kind) {
  return kind == ApiKind::kChatCompletions ? "/v1/chat/completions" : "/v1/completions";
}

namespace {

nlohmann::json BaseBody(std::string_view model, uint32_t max_tokens) {
  nlohmann::json body;
  body["model"] = model;
  body["max_tokens"] = std::max<uint32_t>(1, max_tokens);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["temperature"] = 0;
  return body;
}

std::string Text(const std::vector<workload::TokenId>& prompt, uint32_t begin, uint32_t end) {
  end = std::min<uint32_t>(end, static_cast<uint32_t>(prompt.size()));
  begin = std::min(begin, end);
  return workload::RenderAsText(
      std::vector<workload::TokenId>(prompt.begin() + begin, prompt.begin() + end));
}

}  // namespace

std::string RenderCompletionBody(std::string_view model, std::string_view prompt,
                                 uint32_t max_tokens) {
  nlohmann::json body = BaseBody(model, max_tokens);
  body["prompt"] = prompt;
  return body.dump();
}

std::string RenderChatBody(std::string_view model, const std::vector<ChatMessage>& messages,
                           uint32_t max_tokens) {
  nlohmann::json body = BaseBody(model, max_tokens);
  nlohmann::json list = nlohmann::json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(list);
  return body.dump();
}

std::vector<ChatMessage> ChatTranscript::Messages(const workload::Request& r) {
  const uint32_t size = static_cast<uint32_t>(r.prompt.size());
  if (r.conversation < 0 || r.turn < 0) return {{"user", workload::RenderAsText(r.prompt)}};

  std::vector<uint32_t>& cuts = cuts_[r.conversation];
  const uint32_t shared = std::min(r.shareable_prefix_tokens, size);
  if (r.turn == 0 || cuts.empty() || cuts.back() > shared) {
    // Turn 0 (or a conversation we did not see start): system prompt, then the user message.
    cuts.clear();
    if (shared > 0) cuts.push_back(shared);
  } else if (shared > cuts.back()) {
    cuts.push_back(shared);  // the previous answer
  }
  if (size > (cuts.empty() ? 0 : cuts.back())) cuts.push_back(size);

  std::vector<ChatMessage> messages;
  uint32_t begin = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    // Message 0 is the system prompt; then user and assistant alternate, ending with the user.
    const std::string role = i == 0 ? "system" : (i % 2 == 1 ? "user" : "assistant");
    messages.push_back({role, Text(r.prompt, begin, cuts[i])});
    begin = cuts[i];
  }
  if (messages.size() == 1) messages.front().role = "user";
  if (static_cast<uint32_t>(r.turn) + 1 >= max_turns_) cuts_.erase(r.conversation);
  return messages;
}

}  // namespace hearsay::loadgen
