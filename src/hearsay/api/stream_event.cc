// ParseStreamEvent: decodes one OpenAI stream event; the one-pass scanner first
// (stream_event_scanner.h), and a SAX pass over its JSON for everything the scanner leaves.
//
// The entry node of a forwarded request decodes one event per generated token, so this avoids
// building a JSON tree (a map allocation per object): a SAX handler follows the path to the few
// values it needs and skips everything else. Keys it reads may appear only once per object
// (duplicates are refused rather than resolved silently).
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/api/sse_parser.h"
#include "hearsay/api/stream_event_scanner.h"

namespace hearsay::api {
namespace {

using nlohmann::json;

// Deeper nesting is refused; real chunks nest four levels.
constexpr size_t kMaxDepth = 64;

class ChunkSax final : public nlohmann::json_sax<json> {
 public:
  // Where a container sits in the chunk.
  enum class Ctx { kTop, kChoices, kChoice, kDelta, kUsage, kDetails, kError, kSkip };

  // Empty when the whole input was a valid chunk so far.
  const std::string& problem() const { return problem_; }

  // What was read.
  bool error_present = false;
  ApiError error;
  bool choices_present = false;
  bool delta_present = false;
  std::string delta_content;
  std::string text;
  bool text_invalid = false;  // matters only when there is no delta
  std::string finish_reason;
  bool usage_present = false;
  UsageCounts usage;

  bool null() override { return Scalar(Kind::kNull, nullptr, 0, 0); }
  bool boolean(bool) override { return Scalar(Kind::kOther, nullptr, 0, 0); }
  bool number_integer(number_integer_t v) override {
    // The lexer reports only numbers written with a minus sign here ("-0" included).
    return Scalar(Kind::kSigned, nullptr, 0, v);
  }
  bool number_unsigned(number_unsigned_t v) override {
    return Scalar(Kind::kUnsigned, nullptr, v, 0);
  }
  bool number_float(number_float_t, const string_t&) override {
    return Scalar(Kind::kOther, nullptr, 0, 0);
  }
  bool string(string_t& v) override { return Scalar(Kind::kString, &v, 0, 0); }
  bool binary(binary_t&) override { return Scalar(Kind::kOther, nullptr, 0, 0); }

  bool start_object(std::size_t) override { return Open(/*is_array=*/false); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(/*is_array=*/true); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    if (f.ctx == Ctx::kSkip) return true;
    // A read key seen twice in one object is ambiguous: refuse it.
    const uint32_t bit = KeyBit(f.ctx, k);
    if (bit != 0) {
      if ((f.seen & bit) != 0) return Fail("duplicate key '" + k + "'");
      f.seen |= bit;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    if (problem_.empty()) problem_ = "not JSON and not [DONE]";
    return false;
  }

 private:
  enum class Kind { kNull, kString, kUnsigned, kSigned, kOther, kObject, kArray };

  struct Frame {
    Ctx ctx;
    bool is_array;
    size_t index = 0;   // next element's index, in arrays
    uint32_t seen = 0;  // read keys seen, in objects
    std::string key;    // the current member's key, in objects
  };

  bool Fail(std::string message) {
    if (problem_.empty()) problem_ = std::move(message);
    return false;
  }

  // A bit per key this decoder reads, for duplicate detection; 0 for keys it ignores.
  static uint32_t KeyBit(Ctx ctx, const std::string& k) {
    static constexpr std::pair<Ctx, std::string_view> kRead[] = {
        {Ctx::kTop, "error"},
        {Ctx::kTop, "choices"},
        {Ctx::kTop, "usage"},
        {Ctx::kChoice, "delta"},
        {Ctx::kChoice, "text"},
        {Ctx::kChoice, "finish_reason"},
        {Ctx::kDelta, "content"},
        {Ctx::kUsage, "prompt_tokens"},
        {Ctx::kUsage, "completion_tokens"},
        {Ctx::kUsage, "prompt_tokens_details"},
        {Ctx::kDetails, "cached_tokens"},
        {Ctx::kError, "message"},
        {Ctx::kError, "type"},
        {Ctx::kError, "param"},
        {Ctx::kError, "code"}};
    for (size_t i = 0; i < std::size(kRead); ++i) {
      if (kRead[i].first == ctx && kRead[i].second == k) return uint32_t{1} << i;
    }
    return 0;
  }

  // Decides what a value at the current position means; `child` receives the context a container
  // value opens (kSkip for containers nobody reads).
  bool Value(Kind kind, const std::string* s, uint64_t u, int64_t i, Ctx* child) {
    *child = Ctx::kSkip;
    if (frames_.empty()) {
      if (kind != Kind::kObject) return Fail("not a JSON object");
      *child = Ctx::kTop;
      return true;
    }
    Frame& f = frames_.back();
    const std::string& k = f.key;
    switch (f.ctx) {
      case Ctx::kSkip:
        return true;
      case Ctx::kTop:
        if (k == "error") {
          error_present = kind != Kind::kNull;
          if (kind == Kind::kNull) return true;
          if (kind != Kind::kObject) return Fail("error is not an object");
          *child = Ctx::kError;
        } else if (k == "choices") {
          choices_present = kind != Kind::kNull;
          if (kind == Kind::kNull) return true;
          if (kind != Kind::kArray) return Fail("choices is not an array");
          *child = Ctx::kChoices;
        } else if (k == "usage") {
          usage_present = kind != Kind::kNull;
          if (kind == Kind::kNull) return true;
          if (kind != Kind::kObject) return Fail("usage is not an object");
          *child = Ctx::kUsage;
        }
        return true;
      case Ctx::kChoices:
        // We only ever ask for one choice (n = 1); further ones are not ours to merge.
        if (f.index++ != 0) return true;
        if (kind != Kind::kObject) return Fail("choices[0] is not an object");
        *child = Ctx::kChoice;
        return true;
      case Ctx::kChoice:
        if (k == "delta") {
          delta_present = kind != Kind::kNull;
          if (kind == Kind::kNull) return true;
          if (kind != Kind::kObject) return Fail("choices[0].delta is not an object");
          *child = Ctx::kDelta;
        } else if (k == "text") {
          text_invalid = kind != Kind::kNull && kind != Kind::kString;
          if (kind == Kind::kString) text = *s;
        } else if (k == "finish_reason") {
          return ReadText(kind, s, "finish_reason", &finish_reason);
        }
        return true;
      case Ctx::kDelta:
        if (k == "content") return ReadText(kind, s, "content", &delta_content);
        return true;
      case Ctx::kUsage:
        if (k == "prompt_tokens") return ReadCount(kind, u, &usage.prompt_tokens);
        if (k == "completion_tokens") return ReadCount(kind, u, &usage.completion_tokens);
        if (k == "prompt_tokens_details") {
          if (kind == Kind::kNull) return true;
          if (kind != Kind::kObject) return Fail("usage.prompt_tokens_details is not an object");
          *child = Ctx::kDetails;
        }
        return true;
      case Ctx::kDetails:
        if (k == "cached_tokens") return ReadCount(kind, u, &usage.cached_tokens);
        return true;
      case Ctx::kError:
        if (k == "message") return ReadText(kind, s, "message", &error.message);
        if (k == "type") return ReadText(kind, s, "type", &error.type);
        if (k == "param") return ReadText(kind, s, "param", &error.param);
        if (k == "code") {
          // OpenAI's code is a string, but some servers send a number.
          if (kind == Kind::kUnsigned) {
            error.code = std::to_string(u);
            return true;
          }
          if (kind == Kind::kSigned) {
            error.code = std::to_string(i);
            return true;
          }
          return ReadText(kind, s, "code", &error.code);
        }
        return true;
    }
    return true;
  }

  bool ReadText(Kind kind, const std::string* s, std::string_view name, std::string* out) {
    if (kind == Kind::kNull) {
      out->clear();
      return true;
    }
    if (kind != Kind::kString) return Fail(std::string(name) + " is not a string");
    *out = *s;
    return true;
  }

  bool ReadCount(Kind kind, uint64_t u, uint32_t* out) {
    if (kind == Kind::kNull) {
      *out = 0;
      return true;
    }
    if (kind != Kind::kUnsigned || u > std::numeric_limits<uint32_t>::max()) {
      return Fail("a usage count is not a 32-bit non-negative integer");
    }
    *out = static_cast<uint32_t>(u);
    return true;
  }

  bool Scalar(Kind kind, const std::string* s, uint64_t u, int64_t i) {
    Ctx child;
    return Value(kind, s, u, i, &child);
  }

  bool Open(bool is_array) {
    Ctx child;
    if (!Value(is_array ? Kind::kArray : Kind::kObject, nullptr, 0, 0, &child)) return false;
    if (frames_.size() >= kMaxDepth) return Fail("nested too deep");
    if (child == Ctx::kChoices) {
      // A fresh choices array: forget any earlier one's values.
      delta_present = false;
      delta_content.clear();
      text.clear();
      text_invalid = false;
      finish_reason.clear();
    } else if (child == Ctx::kUsage) {
      usage = UsageCounts{};
    } else if (child == Ctx::kDetails) {
      usage.cached_tokens = 0;
    } else if (child == Ctx::kError) {
      error = ApiError{};
    } else if (child == Ctx::kDelta) {
      delta_content.clear();
    }
    frames_.push_back(Frame{child, is_array, 0, 0, {}});
    return true;
  }

  bool Close() {
    frames_.pop_back();
    return true;
  }

  std::vector<Frame> frames_;
  std::string problem_;
};

Status Invalid(std::string message) {
  return InvalidArgumentError("stream event: " + std::move(message));
}

}  // namespace

Result<StreamEvent> ParseStreamEvent(std::string_view data) {
  if (data != "[DONE]") {
    if (std::optional<StreamEvent> fast = ScanStreamEvent(data)) return std::move(*fast);
  }
  return ParseStreamEventSax(data);
}

Result<StreamEvent> ParseStreamEventSax(std::string_view data) {
  StreamEvent event;
  if (data == "[DONE]") {
    event.done = true;
    return event;
  }
  ChunkSax sax;
  const bool parsed = json::sax_parse(data.begin(), data.end(), &sax);
  if (!parsed || !sax.problem().empty()) {
    return Invalid(sax.problem().empty() ? "not JSON and not [DONE]" : sax.problem());
  }
  if (sax.error_present) {
    ApiError error = std::move(sax.error);
    // A stream has no status of its own; a failure inside one is the server's.
    error.http_status = 500;
    if (error.message.empty()) error.message = "the serving node reported an error";
    if (error.type.empty()) error.type = "server_error";
    event.error = std::move(error);
    return event;
  }
  if (!sax.choices_present && !sax.usage_present)
    return Invalid("neither choices, usage nor error");
  if (sax.delta_present) {
    event.delta_text = std::move(sax.delta_content);
  } else {
    if (sax.text_invalid) return Invalid("text is not a string");
    event.delta_text = std::move(sax.text);
  }
  event.finish_reason = std::move(sax.finish_reason);
  if (sax.usage_present) event.usage = sax.usage;
  return event;
}

}  // namespace hearsay::api
