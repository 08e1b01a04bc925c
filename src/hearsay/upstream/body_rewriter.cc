// RewriteRequestBodyByScan: see body_rewriter.h.
#include "hearsay/upstream/body_rewriter.h"

#include <cstdint>

#include "hearsay/api/json_scanner.h"
#include "hearsay/api/json_text.h"

namespace hearsay::upstream {

using api::JsonScanner;

std::optional<std::string> RewriteRequestBodyByScan(std::string_view body, bool llamacpp,
                                                    std::string_view model, bool stream) {
  JsonScanner s(body);
  s.RefuseDuplicateKeys();
  std::string out;
  out.reserve(body.size() + 128);
  out.push_back('{');
  std::string options;  // the client's stream_options members, other than include_usage
  // Copies body[from, to) as one more member of the object being built in `*into`.
  auto copy = [&](std::string* into, size_t from, size_t to) {
    if (into == &out ? into->size() > 1 : !into->empty()) into->push_back(',');
    into->append(body.substr(from, to - from));
  };
  const bool parsed = s.Object(1, [&](std::string_view key) {
    const size_t start = s.member_start();
    const bool replaced = key == "stream" || (!model.empty() && key == "model") ||
                          (llamacpp && (key == "timings_per_token" || key == "cache_prompt"));
    if (replaced) return s.Skip(2);
    if (key != "stream_options") {
      if (!s.Skip(2)) return false;
      copy(&out, start, s.offset());
      return true;
    }
    // Not an object: replaced by one, as the tree does.
    if (s.Peek() != '{') return s.Skip(2);
    return s.Object(2, [&](std::string_view option) {
      const size_t option_start = s.member_start();
      if (!s.Skip(3)) return false;
      if (option != "include_usage") copy(&options, option_start, s.offset());
      return true;
    });
  });
  if (!parsed || !s.AtEnd()) return std::nullopt;
  if (out.size() > 1) out.push_back(',');
  if (stream) {
    out += R"("stream":true,"stream_options":{)";
    if (!options.empty()) {
      out += options;
      out.push_back(',');
    }
    out += R"("include_usage":true})";
  } else {
    out += R"("stream":false)";
  }
  if (llamacpp) out += R"(,"timings_per_token":true,"cache_prompt":true)";
  if (!model.empty()) {
    out += R"(,"model":)";
    api::AppendJsonString(model, &out);
  }
  out.push_back('}');
  return out;
}

}  // namespace hearsay::upstream
