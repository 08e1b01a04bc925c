// ParseRequest: the scanner first; the tree (the only place nlohmann may throw, caught here) and
// field validation for everything the scanner is not sure of.
#include "hearsay/api/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "hearsay/api/chat_template.h"
#include "hearsay/api/json_type.h"
#include "hearsay/api/model_name.h"
#include "hearsay/api/request_scanner.h"

namespace hearsay::api {
namespace {

using nlohmann::json;

// How much of the body a parse error quotes.
constexpr size_t kErrorExcerptBytes = 24;

std::string Quoted(std::string_view name) {
  // Built by appends: g++ 12 warns falsely (-Wrestrict) on "'" + std::string(...).
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back('\'');
  out.append(name);
  out.push_back('\'');
  return out;
}

ApiError WrongType(std::string_view param, std::string_view expected, const json& got) {
  return InvalidRequest(param,
                        "Invalid type for " + Quoted(param) + ": expected " +
                            std::string(expected) + ", but got " + std::string(JsonTypeName(got)) +
                            " instead.",
                        "invalid_type");
}

ApiError Missing(std::string_view param) {
  return InvalidRequest(param, "Missing required parameter: " + Quoted(param) + ".",
                        "missing_required_parameter");
}

// "<what> is not supported by this server." and, when given, "<supported>." after it.
ApiError NotSupported(std::string_view param, std::string what, std::string_view supported = {}) {
  std::string message = std::move(what);
  message.append(" is not supported by this server.");
  if (!supported.empty()) message.append(" ").append(supported).append(".");
  return InvalidRequest(param, std::move(message), "unsupported_value");
}

// The member `name` of `body`, or nullptr when it is absent or null (OpenAI treats both alike).
const json* Field(const json& body, std::string_view name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// Reads an integer field into `out` if present, checking [min, max].
std::optional<ApiError> ReadInteger(const json& body, std::string_view name, int64_t min,
                                    int64_t max, std::optional<int64_t>* out) {
  const json* v = Field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) return WrongType(name, "an integer", *v);
  // Unsigned values above INT64_MAX are above every limit we accept.
  const bool huge = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX};
  const int64_t value = huge ? INT64_MAX : v->get<int64_t>();
  if (value < min) {
    return InvalidRequest(name,
                          "Invalid " + Quoted(name) +
                              ": integer below minimum value. Expected a "
                              "value >= " +
                              std::to_string(min) + ", but got " +
                              (huge ? v->dump() : std::to_string(value)) + " instead.",
                          "integer_below_min_value");
  }
  if (value > max) {
    return InvalidRequest(name,
                          "Invalid " + Quoted(name) +
                              ": integer above maximum value. Expected a "
                              "value <= " +
                              std::to_string(max) + ", but got " +
                              (huge ? v->dump() : std::to_string(value)) + " instead.",
                          "integer_above_max_value");
  }
  *out = value;
  return std::nullopt;
}

std::optional<ApiError> ReadNumber(const json& body, std::string_view name, double min, double max,
                                   std::optional<double>* out) {
  const json* v = Field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return WrongType(name, "a number", *v);
  const double value = v->get<double>();
  if (!(value >= min)) {
    return InvalidRequest(name,
                          "Invalid " + Quoted(name) +
                              ": decimal below minimum value. Expected a "
                              "value >= " +
                              json(min).dump() + ", but got " + v->dump() + " instead.",
                          "decimal_below_min_value");
  }
  if (!(value <= max)) {
    return InvalidRequest(name,
                          "Invalid " + Quoted(name) +
                              ": decimal above maximum value. Expected a "
                              "value <= " +
                              json(max).dump() + ", but got " + v->dump() + " instead.",
                          "decimal_above_max_value");
  }
  *out = value;
  return std::nullopt;
}

std::optional<ApiError> ReadBool(const json& body, std::string_view name, bool* out) {
  const json* v = Field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return WrongType(name, "a boolean", *v);
  *out = v->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> ReadString(const json& body, std::string_view name, std::string* out) {
  const json* v = Field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return WrongType(name, "a string", *v);
  *out = v->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ReadPrompt(const json& body, std::string* out) {
  const json* v = Field(body, "prompt");
  if (v == nullptr) return Missing("prompt");
  if (v->is_array()) {
    if (v->empty()) {
      return InvalidRequest("prompt", "Invalid 'prompt': the array is empty.", "empty_array");
    }
    const json& first = (*v)[0];
    if (first.is_number_integer() || first.is_array()) {
      return NotSupported("prompt", "A prompt given as token ids");
    }
    if (v->size() > 1) {
      return NotSupported("prompt",
                          "A batch of " + std::to_string(v->size()) +
                              " prompts in one request; send one request per prompt (a batch");
    }
    if (!first.is_string()) return WrongType("prompt[0]", "a string", first);
    v = &first;
  } else if (!v->is_string()) {
    return WrongType("prompt", "a string or an array of one string", *v);
  }
  *out = v->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ReadMaxTokens(const json& body, Endpoint endpoint, const Limits& limits,
                                      uint32_t* out) {
  std::optional<int64_t> max_tokens;
  if (auto e = ReadInteger(body, "max_tokens", 1, limits.max_output_tokens, &max_tokens)) return e;
  if (endpoint == Endpoint::kChatCompletions) {
    // The newer name wins when both are given.
    std::optional<int64_t> max_completion;
    if (auto e = ReadInteger(body, "max_completion_tokens", 1, limits.max_output_tokens,
                             &max_completion)) {
      return e;
    }
    if (max_completion) max_tokens = max_completion;
  }
  *out = max_tokens ? static_cast<uint32_t>(*max_tokens) : limits.default_max_tokens;
  return std::nullopt;
}

std::optional<ApiError> ReadStop(const json& body, std::vector<std::string>* out) {
  const json* v = Field(body, "stop");
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    if (v->get_ref<const std::string&>().empty()) {
      return InvalidRequest("stop", "Invalid 'stop': a stop sequence must not be empty.",
                            "invalid_value");
    }
    out->push_back(v->get<std::string>());
    return std::nullopt;
  }
  if (!v->is_array()) return WrongType("stop", "a string or an array of strings", *v);
  if (v->size() > kMaxStopSequences) {
    return InvalidRequest("stop",
                          "Invalid 'stop': array too long. Expected an array with maximum length " +
                              std::to_string(kMaxStopSequences) +
                              ", but got an array with length " + std::to_string(v->size()) +
                              " instead.",
                          "array_above_max_length");
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    const std::string param = "stop[" + std::to_string(i) + "]";
    if (!s.is_string()) return WrongType(param, "a string", s);
    if (s.get_ref<const std::string&>().empty()) {
      return InvalidRequest(param,
                            "Invalid " + Quoted(param) + ": a stop sequence must not be empty.",
                            "invalid_value");
    }
    out->push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// Options this server cannot honour: refused rather than silently answered wrong.
std::optional<ApiError> RejectUnsupported(const json& body, Endpoint endpoint) {
  std::optional<int64_t> n;
  if (auto e = ReadInteger(body, "n", 1, INT64_MAX, &n)) return e;
  if (n && *n != 1) {
    return NotSupported("n", "n = " + std::to_string(*n), "Only n = 1 is");
  }
  if (endpoint == Endpoint::kCompletions) {
    std::optional<int64_t> best_of;
    if (auto e = ReadInteger(body, "best_of", 1, INT64_MAX, &best_of)) return e;
    if (best_of && *best_of != 1) return NotSupported("best_of", "best_of > 1");
    bool echo = false;
    if (auto e = ReadBool(body, "echo", &echo)) return e;
    if (echo) return NotSupported("echo", "echo = true");
    std::optional<int64_t> logprobs;
    if (auto e = ReadInteger(body, "logprobs", 0, 5, &logprobs)) return e;
    if (logprobs) return NotSupported("logprobs", "logprobs");
    std::string suffix;
    if (auto e = ReadString(body, "suffix", &suffix)) return e;
    if (!suffix.empty()) return NotSupported("suffix", "suffix (insertion)");
  } else {
    bool logprobs = false;
    if (auto e = ReadBool(body, "logprobs", &logprobs)) return e;
    if (logprobs) return NotSupported("logprobs", "logprobs = true");
  }
  return std::nullopt;
}

std::optional<ApiError> ReadStreamOptions(const json& body, ApiRequest* request) {
  if (auto e = ReadBool(body, "stream", &request->stream)) return e;
  const json* options = Field(body, "stream_options");
  if (options == nullptr) return std::nullopt;
  if (!options->is_object()) return WrongType("stream_options", "an object", *options);
  if (!request->stream) {
    return InvalidRequest("stream_options",
                          "The 'stream_options' parameter is only allowed when 'stream' is "
                          "enabled.",
                          "invalid_value");
  }
  const json* include_usage = Field(*options, "include_usage");
  if (include_usage == nullptr) return std::nullopt;
  if (!include_usage->is_boolean()) {
    return WrongType("stream_options.include_usage", "a boolean", *include_usage);
  }
  request->include_usage = include_usage->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> Validate(Endpoint endpoint, const json& body, const Limits& limits,
                                 ApiRequest* request) {
  request->endpoint = endpoint;
  const json* model = Field(body, "model");
  if (model == nullptr) return Missing("model");
  if (!model->is_string()) return WrongType("model", "a string", *model);
  request->model = model->get<std::string>();
  if (request->model.empty()) {
    return InvalidRequest("model", "Invalid 'model': the model name must not be empty.",
                          "invalid_value");
  }
  if (request->model.size() > kMaxModelNameBytes) {
    return InvalidRequest("model",
                          "Invalid 'model': a model name is at most " +
                              std::to_string(kMaxModelNameBytes) + " bytes; this one has " +
                              std::to_string(request->model.size()) + ".",
                          "invalid_value");
  }
  if (auto bad = std::find_if_not(request->model.begin(), request->model.end(), IsModelNameByte);
      bad != request->model.end()) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned char>(*bad));
    return InvalidRequest("model",
                          "Invalid 'model': a model name is printable ASCII without spaces; byte " +
                              std::to_string(bad - request->model.begin()) + " is " + hex + ".",
                          "invalid_value");
  }

  const char* prompt_param;
  if (endpoint == Endpoint::kCompletions) {
    prompt_param = "prompt";
    if (auto e = ReadPrompt(body, &request->prompt)) return e;
  } else {
    prompt_param = "messages";
    const auto messages = body.find("messages");
    if (messages == body.end()) return Missing("messages");
    auto parsed = ParseMessages(*messages);
    if (auto* error = std::get_if<ApiError>(&parsed)) return std::move(*error);
    request->prompt = RenderChat(std::get<std::vector<ChatMessage>>(parsed));
  }
  if (request->prompt.empty()) {
    return InvalidRequest(prompt_param, "Invalid 'prompt': the prompt must not be empty.",
                          "empty_prompt");
  }
  if (request->prompt.size() > limits.max_prompt_chars) {
    return InvalidRequest(prompt_param,
                          "Invalid " + Quoted(prompt_param) + ": the prompt is " +
                              std::to_string(request->prompt.size()) +
                              " bytes long, over this server's limit of " +
                              std::to_string(limits.max_prompt_chars) + " bytes.",
                          "string_above_max_length");
  }

  if (auto e = ReadMaxTokens(body, endpoint, limits, &request->max_tokens)) return e;
  if (auto e = ReadStreamOptions(body, request)) return e;
  if (auto e = RejectUnsupported(body, endpoint)) return e;
  if (auto e = ReadString(body, "user", &request->user)) return e;
  if (auto e = ReadString(body, "cache_salt", &request->cache_salt)) return e;
  std::optional<double> temperature;
  if (auto e = ReadNumber(body, "temperature", 0.0, 2.0, &temperature)) return e;
  if (temperature) request->temperature = *temperature;
  std::optional<double> top_p;
  if (auto e = ReadNumber(body, "top_p", 0.0, 1.0, &top_p)) return e;
  for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
    std::optional<double> value;
    if (auto e = ReadNumber(body, penalty, -2.0, 2.0, &value)) return e;
  }
  const json* seed = Field(body, "seed");
  if (seed != nullptr) {
    if (!seed->is_number_integer()) return WrongType("seed", "an integer", *seed);
    // Negative seeds are accepted, as OpenAI does; the bits are what seed a generator.
    request->seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                               : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (auto e = ReadStop(body, &request->stop)) return e;
  return std::nullopt;
}

}  // namespace

std::string_view EndpointPath(Endpoint endpoint) {
  return endpoint == Endpoint::kCompletions ? "/v1/completions" : "/v1/chat/completions";
}

std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body,
                                                const Limits& limits) {
  // The scanner keeps to the budget itself (it gives up past it), so the budget's own pass runs
  // only before the tree parser.
  if (std::optional<ApiRequest> fast = ScanRequest(endpoint, body, limits)) return std::move(*fast);
  return ParseRequestTree(endpoint, body, limits);
}

std::variant<ApiRequest, ApiError> ParseRequestTree(Endpoint endpoint, std::string_view body,
                                                    const Limits& limits) {
  if (std::optional<ApiError> e = CheckBudget(body, limits.budget)) return std::move(*e);
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
    std::string_view what = e.what();
    if (const size_t close = what.find("] "); close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    // The excerpt of the body nlohmann quotes ("last read: '...'") is cut short: an error body
    // does not echo more than a few bytes of what the client sent.
    std::string message(what);
    if (const size_t quote = message.find("last read: '"); quote != std::string::npos) {
      const size_t start = quote + 12;
      const size_t close = message.rfind('\'');
      const std::string_view excerpt = std::string_view(message).substr(
          start, close > start ? close - start : std::string::npos);
      message = message.substr(0, start) + Truncated(excerpt, kErrorExcerptBytes) + "'";
    }
    return InvalidRequest(
        {},
        "We could not parse the JSON body of your request: " + Truncated(message, 160) +
            ". The API expects a JSON object as the request body.",
        "invalid_json");
  }
  if (!parsed.is_object()) {
    return InvalidRequest({},
                          "The request body must be a JSON object, but got " +
                              std::string(JsonTypeName(parsed)) + " instead.",
                          "invalid_type");
  }
  ApiRequest request;
  if (auto error = Validate(endpoint, parsed, limits, &request)) return std::move(*error);
  return request;
}

std::optional<ApiError> CheckContext(uint32_t prompt_tokens, uint32_t max_tokens,
                                     const Limits& limits, Endpoint endpoint) {
  const uint64_t total = uint64_t{prompt_tokens} + max_tokens;
  if (total <= limits.context_tokens) return std::nullopt;
  const bool chat = endpoint == Endpoint::kChatCompletions;
  const std::string_view what = chat ? "messages" : "prompt";
  return InvalidRequest(
      what,
      "This model's maximum context length is " + std::to_string(limits.context_tokens) +
          " tokens. However, you requested " + std::to_string(total) + " tokens (" +
          std::to_string(prompt_tokens) + " in the " + std::string(what) + ", " +
          std::to_string(max_tokens) + " in the completion). Please reduce the length of the " +
          std::string(what) + " or completion.",
      "context_length_exceeded");
}

}  // namespace hearsay::api
