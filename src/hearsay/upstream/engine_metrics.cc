#include "hearsay/upstream/engine_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace hearsay::upstream {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// The end of a `{...}` label set starting at text[0] == '{', skipping quoted values (which may
// hold '}' and escaped quotes); npos when it does not close on this line.
size_t LabelsEnd(std::string_view line) {
  bool quoted = false;
  for (size_t i = 1; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The sample value after the name and labels: a finite, non-negative number.
Result<double> SampleValue(std::string_view rest) {
  size_t start = 0;
  while (start < rest.size() && IsSpace(rest[start])) ++start;
  if (start == 0) return InvalidArgumentError("no space before the value");
  size_t end = start;
  while (end < rest.size() && !IsSpace(rest[end])) ++end;
  const std::string_view token = rest.substr(start, end - start);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || ptr != token.data() + token.size()) {
    return InvalidArgumentError("value is not a number");
  }
  if (!std::isfinite(value) || value < 0) {
    return InvalidArgumentError("value is not finite and non-negative");
  }
  return value;
}

}  // namespace

Result<GaugeSums> SumGauges(std::string_view text, std::span<const std::string_view> names) {
  if (text.size() > kMaxMetricsBytes) {
    return InvalidArgumentError("metrics page over " + std::to_string(kMaxMetricsBytes) + " bytes");
  }
  GaugeSums out;
  out.sums.assign(names.size(), 0);
  out.samples.assign(names.size(), 0);
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t name_end = std::min(line.find_first_of("{ \t"), line.size());
    const auto it = std::find(names.begin(), names.end(), line.substr(0, name_end));
    if (it == names.end()) continue;
    std::string_view rest = line.substr(name_end);
    if (!rest.empty() && rest.front() == '{') {
      const size_t end = LabelsEnd(rest);
      if (end == std::string_view::npos) {
        return InvalidArgumentError("metrics line " + std::to_string(line_no) +
                                    ": unclosed label set");
      }
      rest.remove_prefix(end);
    }
    Result<double> value = SampleValue(rest);
    if (!value.ok()) {
      return InvalidArgumentError("metrics line " + std::to_string(line_no) + ": " +
                                  value.status().message());
    }
    const size_t i = static_cast<size_t>(it - names.begin());
    out.sums[i] += value.value();
    ++out.samples[i];
  }
  return out;
}

std::optional<QueueGaugeNames> QueueGaugesOf(UpstreamFlavor flavor) {
  switch (flavor) {
    case UpstreamFlavor::kLlamaCpp:
      return QueueGaugeNames{"llamacpp:requests_processing", "llamacpp:requests_deferred"};
    case UpstreamFlavor::kVllm:
      return QueueGaugeNames{"vllm:num_requests_running", "vllm:num_requests_waiting"};
    case UpstreamFlavor::kSglang:
      return QueueGaugeNames{"sglang:num_running_reqs", "sglang:num_queue_reqs"};
    case UpstreamFlavor::kGeneric:
      break;
  }
  return std::nullopt;
}

Result<EngineQueue> ParseEngineQueue(UpstreamFlavor flavor, std::string_view text) {
  const std::optional<QueueGaugeNames> gauges = QueueGaugesOf(flavor);
  if (!gauges) return NotFoundError("this engine publishes no queue gauges");
  const std::string_view names[] = {gauges->running, gauges->waiting};
  HEARSAY_ASSIGN_OR_RETURN(GaugeSums sums, SumGauges(text, names));
  for (size_t i = 0; i < 2; ++i) {
    if (sums.samples[i] == 0) return NotFoundError(std::string(names[i]) + " is not on the page");
  }
  auto count = [](double v) {
    return static_cast<uint32_t>(std::min<double>(std::round(v), kMaxReportedRequests));
  };
  return EngineQueue{count(sums.sums[0]), count(sums.sums[1])};
}

}  // namespace hearsay::upstream
