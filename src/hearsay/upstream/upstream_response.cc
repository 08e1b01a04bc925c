// Decoders for upstream responses: see upstream_response.h.
#include "hearsay/upstream/upstream_response.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "hearsay/upstream/body_rewriter.h"
#include "hearsay/upstream/chunk_scanner.h"
#include "hearsay/upstream/untrusted_json.h"

namespace hearsay::upstream {
namespace {

using nlohmann::json;

// Reads an optional non-negative integer field that must fit uint32.
Status ReadCount(const json& obj, const char* name, std::optional<uint32_t>* out) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return OkStatus();
  if (it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0)) {
    const uint64_t v = it->get<uint64_t>();
    if (v > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgumentError(std::string(name) + " out of range");
    }
    *out = static_cast<uint32_t>(v);
    return OkStatus();
  }
  // llama.cpp reports some counts as floats in old versions; accept whole non-negative values.
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d >= 0 && d <= std::numeric_limits<uint32_t>::max() && d == static_cast<uint32_t>(d)) {
      *out = static_cast<uint32_t>(d);
      return OkStatus();
    }
  }
  return InvalidArgumentError(std::string(name) + " is not a non-negative integer");
}

// llama.cpp's next_token[0].n_remain: a count, or -1 for a request without an output limit.
Status ReadRemaining(const json& slot, std::optional<uint32_t>* out) {
  auto next = slot.find("next_token");
  if (next == slot.end() || next->is_null()) return OkStatus();
  if (!next->is_array()) return InvalidArgumentError("/slots next_token is not an array");
  if (next->empty()) return OkStatus();
  if (!next->front().is_object()) return InvalidArgumentError("/slots next_token is not objects");
  auto n = next->front().find("n_remain");
  if (n != next->front().end() && n->is_number_integer() && n->get<int64_t>() < 0) {
    return OkStatus();  // unlimited
  }
  return ReadCount(next->front(), "n_remain", out);
}

std::string ErrorText(const json& err) {
  if (err.is_string()) return err.get<std::string>();
  if (err.is_object()) {
    auto m = err.find("message");
    if (m != err.end() && m->is_string()) return m->get<std::string>();
  }
  return err.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Result<UpstreamChunk> ParseUpstreamChunk(std::string_view data) {
  std::string_view trimmed = data;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n')) {
    trimmed.remove_suffix(1);
  }
  if (trimmed == "[DONE]") {
    UpstreamChunk c;
    c.done = true;
    return c;
  }
  if (std::optional<UpstreamChunk> fast = ScanUpstreamChunk(data)) return std::move(*fast);
  return ParseUpstreamChunkTree(data);
}

Result<UpstreamChunk> ParseUpstreamChunkTree(std::string_view data) {
  UpstreamChunk c;
  std::string_view trimmed = data;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n')) {
    trimmed.remove_suffix(1);
  }
  if (trimmed == "[DONE]") {
    c.done = true;
    return c;
  }
  json j = ParseUntrustedJson(data);
  if (j.is_discarded()) return InvalidArgumentError("upstream chunk is not JSON");
  if (!j.is_object()) return InvalidArgumentError("upstream chunk is not a JSON object");

  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    c.error = ErrorText(*e);
    return c;
  }

  auto choices = j.find("choices");
  const bool has_choices = choices != j.end() && !choices->is_null();
  if (has_choices) {
    if (!choices->is_array()) return InvalidArgumentError("choices is not an array");
    if (!choices->empty()) {
      const json& ch = (*choices)[0];
      if (!ch.is_object()) return InvalidArgumentError("choices[0] is not an object");
      if (auto t = ch.find("text"); t != ch.end() && !t->is_null()) {
        if (!t->is_string()) return InvalidArgumentError("choices[0].text is not a string");
        c.text = t->get<std::string>();
      } else {
        // A streamed chunk's delta, else a whole answer's message.
        const char* holder = "delta";
        auto d = ch.find(holder);
        if (d == ch.end() || d->is_null()) d = ch.find(holder = "message");
        if (d != ch.end() && !d->is_null()) {
          if (!d->is_object()) {
            return InvalidArgumentError(std::string("choices[0].") + holder + " is not an object");
          }
          if (auto ct = d->find("content"); ct != d->end() && !ct->is_null()) {
            if (!ct->is_string()) {
              return InvalidArgumentError(std::string(holder) + ".content is not a string");
            }
            c.text = ct->get<std::string>();
          }
        }
      }
      if (auto f = ch.find("finish_reason"); f != ch.end() && f->is_string()) {
        c.finish_reason = f->get<std::string>();
      }
    }
  }

  const auto usage = j.find("usage");
  const bool has_usage = usage != j.end() && !usage->is_null();
  if (has_usage) {
    if (!usage->is_object()) return InvalidArgumentError("usage is not an object");
    if (Status s = ReadCount(*usage, "prompt_tokens", &c.prompt_tokens); !s.ok()) return s;
    if (Status s = ReadCount(*usage, "completion_tokens", &c.completion_tokens); !s.ok()) {
      return s;
    }
    if (auto d = usage->find("prompt_tokens_details"); d != usage->end() && !d->is_null()) {
      if (!d->is_object()) return InvalidArgumentError("prompt_tokens_details is not an object");
      if (Status s = ReadCount(*d, "cached_tokens", &c.cached_tokens); !s.ok()) return s;
    }
  }

  const auto timings = j.find("timings");
  const bool has_timings = timings != j.end() && !timings->is_null();
  if (has_timings) {
    if (!timings->is_object()) return InvalidArgumentError("timings is not an object");
    std::optional<uint32_t> cache_n;
    if (Status s = ReadCount(*timings, "cache_n", &cache_n); !s.ok()) return s;
    if (Status s = ReadCount(*timings, "prompt_n", &c.prompt_computed_tokens); !s.ok()) return s;
    if (!c.cached_tokens) c.cached_tokens = cache_n;
    if (!c.prompt_tokens && cache_n && c.prompt_computed_tokens) {
      c.prompt_tokens = *cache_n + *c.prompt_computed_tokens;
    }
    if (auto pm = timings->find("prompt_ms"); pm != timings->end() && pm->is_number()) {
      const double ms = pm->get<double>();
      if (ms >= 0 && ms < 1e9) c.prompt_ms = ms;
    }
  }

  if (!has_choices && !has_usage && !has_timings) {
    return InvalidArgumentError("upstream chunk has neither choices, usage nor timings");
  }
  return c;
}

std::string UpstreamErrorMessage(std::string_view body) {
  constexpr size_t kMaxLen = 300;
  json j = ParseUntrustedJson(body);
  if (!j.is_discarded() && j.is_object()) {
    for (const char* field : {"error", "message", "detail"}) {
      if (auto it = j.find(field); it != j.end() && !it->is_null()) {
        std::string s = ErrorText(*it);
        return s.size() > kMaxLen ? s.substr(0, kMaxLen) + "..." : s;
      }
    }
  }
  std::string s(body.substr(0, kMaxLen));
  if (body.size() > kMaxLen) s += "...";
  return s;
}

Result<std::vector<SlotState>> ParseSlots(std::string_view body) {
  json j = ParseUntrustedJson(body);
  if (j.is_discarded()) return InvalidArgumentError("/slots body is not JSON");
  if (!j.is_array()) return InvalidArgumentError("/slots body is not a JSON array");
  std::vector<SlotState> out;
  out.reserve(j.size());
  for (const json& s : j) {
    if (!s.is_object()) return InvalidArgumentError("/slots entry is not an object");
    SlotState st;
    if (auto id = s.find("id"); id != s.end() && id->is_number_integer()) {
      st.id = id->get<int64_t>();
    }
    if (auto p = s.find("is_processing"); p != s.end() && p->is_boolean()) {
      st.is_processing = p->get<bool>();
    }
    if (auto p = s.find("prompt"); p != s.end() && p->is_string())
      st.prompt = p->get<std::string>();
    if (auto g = s.find("generated"); g != s.end() && g->is_string()) {
      st.generated = g->get<std::string>();
    }
    std::optional<uint32_t> n;
    if (Status e = ReadCount(s, "n_prompt_tokens", &n); !e.ok()) return e;
    st.tokens = n;
    if (Status e = ReadCount(s, "n_ctx", &st.n_ctx); !e.ok()) return e;
    if (Status e = ReadRemaining(s, &st.remaining_tokens); !e.ok()) return e;
    out.push_back(std::move(st));
  }
  return out;
}

SlotsSummary SummarizeSlots(std::span<const SlotState> slots) {
  SlotsSummary s;
  s.slots = static_cast<uint32_t>(std::min<size_t>(slots.size(), UINT32_MAX));
  for (const SlotState& slot : slots) {
    s.n_ctx = std::max(s.n_ctx, slot.n_ctx.value_or(0));
    if (!slot.is_processing) continue;
    ++s.busy;
    if (slot.remaining_tokens) {
      s.soonest_free_tokens =
          std::min(s.soonest_free_tokens.value_or(UINT32_MAX), *slot.remaining_tokens);
    }
  }
  return s;
}

Result<std::string> RewriteRequestBody(std::string_view body, bool llamacpp, std::string_view model,
                                       bool stream) {
  if (std::optional<std::string> fast = RewriteRequestBodyByScan(body, llamacpp, model, stream)) {
    return std::move(*fast);
  }
  return RewriteRequestBodyTree(body, llamacpp, model, stream);
}

Result<std::string> RewriteRequestBodyTree(std::string_view body, bool llamacpp,
                                           std::string_view model, bool stream) {
  json j = ParseUntrustedJson(body);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("request body is not a JSON object");
  }
  j["stream"] = stream;
  if (stream) {
    json& so = j["stream_options"];
    if (!so.is_object()) so = json::object();
    so["include_usage"] = true;
  } else {
    j.erase("stream_options");
  }
  if (llamacpp) {
    j["timings_per_token"] = true;
    j["cache_prompt"] = true;
  }
  if (!model.empty()) j["model"] = std::string(model);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> WithCacheSalt(std::string_view body, uint64_t cache_namespace) {
  json j = ParseUntrustedJson(body);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError("request body is not a JSON object");
  }
  j["cache_salt"] = fmt::format("hearsay-{:016x}", cache_namespace);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string PromptText(std::string_view body) {
  json j = ParseUntrustedJson(body);
  if (j.is_discarded() || !j.is_object()) return {};
  if (auto p = j.find("prompt"); p != j.end()) {
    if (p->is_string()) return p->get<std::string>();
    if (p->is_array() && !p->empty() && (*p)[0].is_string()) return (*p)[0].get<std::string>();
    return {};
  }
  std::string text;
  if (auto m = j.find("messages"); m != j.end() && m->is_array()) {
    for (const json& msg : *m) {
      if (!msg.is_object()) continue;
      auto c = msg.find("content");
      if (c == msg.end() || !c->is_string()) continue;
      if (!text.empty()) text += '\n';
      text += c->get<std::string>();
    }
  }
  return text;
}

}  // namespace hearsay::upstream
