// Response rendering by appending JSON text: one chunk per generated token is the hot path.
#include "hearsay/api/openai_response.h"

#include <charconv>
#include <string>

#include "hearsay/api/json_text.h"

namespace hearsay::api {
namespace {

// Appends an integer without a temporary string.
void AppendInteger(int64_t v, std::string* out) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

bool IsChat(const ResponseMeta& meta) { return meta.endpoint == Endpoint::kChatCompletions; }

// {"id":...,"object":...,"created":...,"model":...,"system_fingerprint":...,
void AppendHead(const ResponseMeta& meta, std::string_view object, std::string* out) {
  out->append(R"({"id":)");
  AppendJsonString(meta.id, out);
  out->append(R"(,"object":")");
  out->append(object);
  out->append(R"(","created":)");
  AppendInteger(meta.created, out);
  out->append(R"(,"model":)");
  AppendJsonString(meta.model, out);
  out->append(R"(,"system_fingerprint":)");
  AppendJsonStringOrNull(meta.system_fingerprint, out);
  out->push_back(',');
}

void AppendUsage(const UsageCounts& usage, std::string* out) {
  out->append(R"("usage":{"prompt_tokens":)");
  out->append(std::to_string(usage.prompt_tokens));
  out->append(R"(,"completion_tokens":)");
  out->append(std::to_string(usage.completion_tokens));
  out->append(R"(,"total_tokens":)");
  out->append(std::to_string(uint64_t{usage.prompt_tokens} + usage.completion_tokens));
  out->append(R"(,"prompt_tokens_details":{"cached_tokens":)");
  out->append(std::to_string(usage.cached_tokens));
  out->append("}}");
}

std::string_view ChunkObject(const ResponseMeta& meta) {
  return IsChat(meta) ? "chat.completion.chunk" : "text_completion";
}

std::string SseEvent(std::string json) {
  json.insert(0, "data: ");
  json.append("\n\n");
  return json;
}

}  // namespace

std::string RenderCompletion(const ResponseMeta& meta, std::string_view text,
                             std::string_view finish_reason, const UsageCounts& usage) {
  std::string out;
  out.reserve(320 + text.size() + meta.id.size() + meta.model.size());
  if (IsChat(meta)) {
    AppendHead(meta, "chat.completion", &out);
    out.append(R"("choices":[{"index":0,"message":{"role":"assistant","content":)");
    AppendJsonString(text, &out);
    out.append(R"(,"refusal":null},"logprobs":null,"finish_reason":)");
  } else {
    AppendHead(meta, "text_completion", &out);
    out.append(R"("choices":[{"index":0,"text":)");
    AppendJsonString(text, &out);
    out.append(R"(,"logprobs":null,"finish_reason":)");
  }
  AppendJsonStringOrNull(finish_reason, &out);
  out.append("}],");
  AppendUsage(usage, &out);
  out.push_back('}');
  return out;
}

ChunkRenderer::ChunkRenderer(const ResponseMeta& meta) : chat_(IsChat(meta)) {
  head_.append("data: ");
  AppendHead(meta, ChunkObject(meta), &head_);
}

void ChunkRenderer::Append(std::string_view delta_text, bool first, std::string* out) const {
  out->reserve(out->size() + head_.size() + 96 + delta_text.size());
  out->append(head_);
  if (chat_) {
    out->append(R"("choices":[{"index":0,"delta":{)");
    if (first) out->append(R"("role":"assistant",)");
    out->append(R"("content":)");
    AppendJsonString(delta_text, out);
    out->append(R"(},"logprobs":null,"finish_reason":null}]})");
  } else {
    out->append(R"("choices":[{"index":0,"text":)");
    AppendJsonString(delta_text, out);
    out->append(R"(,"logprobs":null,"finish_reason":null}]})");
  }
  out->append("\n\n");
}

std::string RenderChunk(const ResponseMeta& meta, std::string_view delta_text, bool first) {
  std::string out;
  ChunkRenderer(meta).Append(delta_text, first, &out);
  return out;
}

std::string RenderFinalChunk(const ResponseMeta& meta, std::string_view finish_reason) {
  std::string out;
  out.append("data: ");
  AppendHead(meta, ChunkObject(meta), &out);
  if (IsChat(meta)) {
    out.append(R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":)");
  } else {
    out.append(R"("choices":[{"index":0,"text":"","logprobs":null,"finish_reason":)");
  }
  AppendJsonStringOrNull(finish_reason, &out);
  out.append("}]}\n\n");
  return out;
}

std::string RenderUsageChunk(const ResponseMeta& meta, const UsageCounts& usage) {
  std::string out;
  out.append("data: ");
  AppendHead(meta, ChunkObject(meta), &out);
  out.append(R"("choices":[],)");
  AppendUsage(usage, &out);
  out.append("}\n\n");
  return out;
}

std::string RenderSseError(const ApiError& error) { return SseEvent(RenderError(error)); }

std::string RenderModels(std::span<const std::string> models, int64_t created,
                         std::string_view owner) {
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < models.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(R"({"id":)");
    AppendJsonString(models[i], &out);
    out.append(R"(,"object":"model","created":)");
    out.append(std::to_string(created));
    out.append(R"(,"owned_by":)");
    AppendJsonString(owner, &out);
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

}  // namespace hearsay::api
