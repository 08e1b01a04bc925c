// Requests to and answers from an engine's /tokenize: see tokenize_codec.h.
#include "hearsay/upstream/tokenize_codec.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "hearsay/upstream/untrusted_json.h"

namespace hearsay::upstream {
namespace {

using nlohmann::json;

// A token id: an integer in [0, 2^32).
bool ReadId(const json& v, uint32_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > std::numeric_limits<uint32_t>::max()) return false;
    *out = static_cast<uint32_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0 || i > std::numeric_limits<uint32_t>::max()) return false;
    *out = static_cast<uint32_t>(i);
    return true;
  }
  return false;
}

}  // namespace

bool TokenizeTakesMessages(UpstreamFlavor flavor) { return flavor == UpstreamFlavor::kVllm; }

bool HasApplyTemplate(UpstreamFlavor flavor) { return flavor == UpstreamFlavor::kLlamaCpp; }

Result<TokenizeCall> TokenizePromptCall(UpstreamFlavor flavor, std::string_view model,
                                        std::string_view prompt) {
  json body = json::object();
  switch (flavor) {
    case UpstreamFlavor::kLlamaCpp:
      body["content"] = prompt;
      // What the server does for a completion: BOS added, special tokens parsed.
      body["add_special"] = true;
      body["parse_special"] = true;
      break;
    case UpstreamFlavor::kVllm:
    case UpstreamFlavor::kSglang:
      if (!model.empty()) body["model"] = model;
      body["prompt"] = prompt;
      body["add_special_tokens"] = true;
      break;
    case UpstreamFlavor::kGeneric:
      return FailedPreconditionError(
          "upstream flavor generic has no known /tokenize endpoint; set the flavor "
          "(llamacpp, vllm, sglang)");
  }
  // Invalid UTF-8 in the prompt becomes U+FFFD instead of throwing.
  return TokenizeCall{"/tokenize", body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

Result<TokenizeCall> TokenizeMessagesCall(UpstreamFlavor flavor, std::string_view model,
                                          std::string_view messages_json) {
  json messages = ParseUntrustedJson(messages_json);
  if (!messages.is_array()) return InvalidArgumentError("messages is not a JSON array");
  json body = json::object();
  if (flavor == UpstreamFlavor::kVllm) {
    if (!model.empty()) body["model"] = model;
    body["messages"] = std::move(messages);
    body["add_generation_prompt"] = true;
    return TokenizeCall{"/tokenize", body.dump(-1, ' ', false, json::error_handler_t::replace)};
  }
  if (flavor == UpstreamFlavor::kLlamaCpp) {
    body["messages"] = std::move(messages);
    return TokenizeCall{"/apply-template",
                        body.dump(-1, ' ', false, json::error_handler_t::replace)};
  }
  return FailedPreconditionError("upstream flavor " + std::string(UpstreamFlavorName(flavor)) +
                                 " cannot render chat messages with its own template");
}

Result<std::vector<uint32_t>> ParseTokenizeResponse(std::string_view body, size_t max_tokens) {
  const json j = ParseUntrustedJson(body);
  if (!j.is_object()) return InvalidArgumentError("tokenize response is not a JSON object");
  auto it = j.find("tokens");
  if (it == j.end() || !it->is_array()) {
    return InvalidArgumentError("tokenize response has no \"tokens\" array");
  }
  if (it->size() > max_tokens) {
    return InvalidArgumentError("tokenize response has " + std::to_string(it->size()) +
                                " tokens, more than the limit of " + std::to_string(max_tokens));
  }
  std::vector<uint32_t> out;
  out.reserve(it->size());
  for (const json& t : *it) {
    uint32_t id = 0;
    const json* v = &t;
    if (t.is_object()) {  // llama.cpp with_pieces: {"id": n, "piece": ...}
      auto idf = t.find("id");
      if (idf == t.end()) return InvalidArgumentError("tokenize response: token without \"id\"");
      v = &*idf;
    }
    if (!ReadId(*v, &id)) {
      return InvalidArgumentError("tokenize response: token " + std::to_string(out.size()) +
                                  " is not an integer id in [0, 2^32)");
    }
    out.push_back(id);
  }
  if (auto c = j.find("count"); c != j.end() && !c->is_null()) {
    uint32_t count = 0;
    if (!ReadId(*c, &count) || count != out.size()) {
      return InvalidArgumentError("tokenize response: \"count\" disagrees with the token list");
    }
  }
  return out;
}

Result<std::string> ParseApplyTemplateResponse(std::string_view body, size_t max_bytes) {
  const json j = ParseUntrustedJson(body);
  if (!j.is_object()) return InvalidArgumentError("apply-template response is not a JSON object");
  auto it = j.find("prompt");
  if (it == j.end() || !it->is_string()) {
    return InvalidArgumentError("apply-template response has no \"prompt\" string");
  }
  const std::string& prompt = it->get_ref<const std::string&>();
  if (prompt.size() > max_bytes) {
    return InvalidArgumentError("apply-template prompt is longer than " +
                                std::to_string(max_bytes) + " bytes");
  }
  return prompt;
}

Result<std::string> MessagesJson(std::string_view chat_body) {
  const json j = ParseUntrustedJson(chat_body);
  if (!j.is_object()) return InvalidArgumentError("chat body is not a JSON object");
  auto it = j.find("messages");
  if (it == j.end() || !it->is_array()) return InvalidArgumentError("chat body has no messages");
  return it->dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hearsay::upstream
