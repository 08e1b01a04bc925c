#include "fixed_response.h"

#include <nlohmann/json.hpp>

namespace hearsay::bench {
namespace {

using nlohmann::json;

std::string Word(uint32_t i) { return i == 0 ? "token0" : " token" + std::to_string(i); }

json Usage(const FixedResponseOptions& o) {
  return {{"prompt_tokens", o.prompt_tokens},
          {"completion_tokens", o.completion_tokens},
          {"total_tokens", o.prompt_tokens + o.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", o.cached_tokens}}}};
}

json Envelope(const FixedResponseOptions& o, bool chat, bool chunk) {
  return {
      {"id", chat ? "chatcmpl-fixed" : "cmpl-fixed"},
      {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
      {"created", 0},
      {"model", o.model}};
}

std::string Event(const json& j) { return "data: " + j.dump() + "\n\n"; }

}  // namespace

Result<FixedRequest> ParseFixedRequest(std::string_view body, bool chat) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("the request body is not a JSON object");
  FixedRequest r;
  r.chat = chat;
  if (auto it = j.find("stream"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidArgumentError("'stream' must be a boolean");
    r.stream = it->get<bool>();
  }
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return InvalidArgumentError("'stream_options' must be an object");
    if (auto u = it->find("include_usage"); u != it->end() && !u->is_null()) {
      if (!u->is_boolean()) {
        return InvalidArgumentError("'stream_options.include_usage' must be a boolean");
      }
      r.include_usage = u->get<bool>();
    }
  }
  return r;
}

Result<FixedResponses> FixedResponses::Create(FixedResponseOptions o) {
  if (o.completion_tokens == 0) return InvalidArgumentError("completion_tokens must be >= 1");
  if (o.cached_tokens > o.prompt_tokens) {
    return InvalidArgumentError("cached_tokens must not exceed prompt_tokens");
  }
  FixedResponses r;
  std::string text;
  for (uint32_t i = 0; i < o.completion_tokens; ++i) text += Word(i);

  json completion = Envelope(o, false, false);
  completion["choices"] = json::array(
      {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", "length"}}});
  completion["usage"] = Usage(o);
  r.completion_body_ = completion.dump();

  json chat = Envelope(o, true, false);
  chat["choices"] = json::array({{{"index", 0},
                                  {"message", {{"role", "assistant"}, {"content", text}}},
                                  {"finish_reason", "length"}}});
  chat["usage"] = Usage(o);
  r.chat_body_ = chat.dump();

  // Streams: chat opens with the role delta, as OpenAI's does; each piece is one event; a last
  // event carries finish_reason; the usage event (empty choices) follows only on request.
  json role = Envelope(o, true, true);
  role["choices"] = json::array({{{"index", 0},
                                  {"delta", {{"role", "assistant"}, {"content", ""}}},
                                  {"finish_reason", nullptr}}});
  r.chat_events_.push_back(Event(role));
  for (uint32_t i = 0; i < o.completion_tokens; ++i) {
    json c = Envelope(o, false, true);
    c["choices"] = json::array(
        {{{"index", 0}, {"text", Word(i)}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    r.completion_events_.push_back(Event(c));
    json h = Envelope(o, true, true);
    h["choices"] = json::array(
        {{{"index", 0}, {"delta", {{"content", Word(i)}}}, {"finish_reason", nullptr}}});
    r.chat_events_.push_back(Event(h));
  }
  json c_end = Envelope(o, false, true);
  c_end["choices"] = json::array(
      {{{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", "length"}}});
  r.completion_events_.push_back(Event(c_end));
  json h_end = Envelope(o, true, true);
  h_end["choices"] =
      json::array({{{"index", 0}, {"delta", json::object()}, {"finish_reason", "length"}}});
  r.chat_events_.push_back(Event(h_end));

  json c_usage = Envelope(o, false, true);
  c_usage["choices"] = json::array();
  c_usage["usage"] = Usage(o);
  r.completion_usage_event_ = Event(c_usage);
  json h_usage = Envelope(o, true, true);
  h_usage["choices"] = json::array();
  h_usage["usage"] = Usage(o);
  r.chat_usage_event_ = Event(h_usage);
  return r;
}

std::vector<std::string_view> FixedResponses::Stream(bool chat, bool include_usage) const {
  static constexpr std::string_view kDone = "data: [DONE]\n\n";
  const std::vector<std::string>& events = chat ? chat_events_ : completion_events_;
  std::vector<std::string_view> out(events.begin(), events.end());
  if (include_usage) out.push_back(chat ? chat_usage_event_ : completion_usage_event_);
  out.push_back(kDone);
  return out;
}

}  // namespace hearsay::bench
