#include "hearsay/workload/trace_workload.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

namespace hearsay::workload {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kBlockStream = 0x7472616365626c6bULL;
constexpr uint64_t kTailStream = 0x7472616365746c31ULL;
// 1e12 ms is 31 years: far past any trace, and safely inside int64 nanoseconds.
constexpr double kMaxTimestampMs = 1e12;

// nlohmann prefixes messages with "[json.exception.parse_error.101] "; the rest is readable.
std::string JsonMessage(const std::exception& e) {
  std::string_view m = e.what();
  if (!m.empty() && m.front() == '[') {
    const size_t close = m.find("] ");
    if (close != std::string_view::npos) m.remove_prefix(close + 2);
  }
  return std::string(m);
}

Result<uint32_t> ReadLength(const Json& obj, const char* field, uint32_t max) {
  const auto it = obj.find(field);
  if (it == obj.end()) return InvalidArgumentError(std::string("missing field \"") + field + "\"");
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    return InvalidArgumentError(std::string("\"") + field + "\" is negative");
  }
  if (!it->is_number_unsigned()) {
    return InvalidArgumentError(std::string("\"") + field + "\" must be a non-negative integer");
  }
  const uint64_t v = it->get<uint64_t>();
  if (v > max) {
    return InvalidArgumentError(std::string("\"") + field + "\" is " + std::to_string(v) +
                                ", above the limit " + std::to_string(max));
  }
  return static_cast<uint32_t>(v);
}

Result<TraceRecord> ParseObject(const Json& obj, const TraceOptions& options) {
  if (!obj.is_object()) return InvalidArgumentError("not a JSON object");
  TraceRecord rec;

  const auto ts = obj.find("timestamp");
  if (ts == obj.end()) return InvalidArgumentError("missing field \"timestamp\"");
  if (!ts->is_number()) return InvalidArgumentError("\"timestamp\" must be a number");
  const double ms = ts->get<double>();
  if (!(ms >= 0)) return InvalidArgumentError("\"timestamp\" is negative");
  if (ms > kMaxTimestampMs) return InvalidArgumentError("\"timestamp\" is too large");
  rec.arrival = FromMillis(ms);

  HEARSAY_ASSIGN_OR_RETURN(rec.input_length,
                           ReadLength(obj, "input_length", options.max_tokens_per_request));
  if (rec.input_length == 0) return InvalidArgumentError("\"input_length\" must be >= 1");
  HEARSAY_ASSIGN_OR_RETURN(rec.output_length,
                           ReadLength(obj, "output_length", options.max_tokens_per_request));

  const auto ids = obj.find("hash_ids");
  if (ids == obj.end()) return InvalidArgumentError("missing field \"hash_ids\"");
  if (!ids->is_array()) return InvalidArgumentError("\"hash_ids\" must be an array");
  const uint64_t max_ids =
      (uint64_t{rec.input_length} + options.block_tokens - 1) / options.block_tokens;
  if (ids->size() > max_ids) {
    return InvalidArgumentError("\"hash_ids\" has " + std::to_string(ids->size()) +
                                " ids but input_length " + std::to_string(rec.input_length) +
                                " allows at most " + std::to_string(max_ids) + " blocks of " +
                                std::to_string(options.block_tokens) + " tokens");
  }
  rec.hash_ids.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    const Json& id = (*ids)[i];
    if (!id.is_number_unsigned()) {
      return InvalidArgumentError("\"hash_ids\"[" + std::to_string(i) +
                                  "] must be a non-negative integer");
    }
    rec.hash_ids.push_back(id.get<uint64_t>());
  }
  return rec;
}

std::string LinePrefix(size_t line_number) {
  return "trace line " + std::to_string(line_number) + ": ";
}

}  // namespace

Result<TraceRecord> ParseTraceLine(std::string_view line, const TraceOptions& options) {
  if (options.block_tokens < 1) return InvalidArgumentError("block_tokens must be >= 1");
  Json obj;
  try {
    obj = Json::parse(line.begin(), line.end());
  } catch (const std::exception& e) {
    return InvalidArgumentError("bad JSON: " + JsonMessage(e));
  }
  // ParseObject only uses non-throwing accessors after type checks; the guard is for bad_alloc.
  try {
    return ParseObject(obj, options);
  } catch (const std::exception& e) {
    return InvalidArgumentError(JsonMessage(e));
  }
}

Result<Trace> Trace::Parse(std::string_view text, const TraceOptions& options) {
  if (options.block_tokens < 1) return InvalidArgumentError("block_tokens must be >= 1");
  Trace trace;
  trace.block_tokens_ = options.block_tokens;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;

    Result<TraceRecord> rec = ParseTraceLine(line, options);
    if (!rec.ok()) return InvalidArgumentError(LinePrefix(line_number) + rec.status().message());
    if (!options.sort_by_timestamp && !trace.records_.empty() &&
        rec->arrival < trace.records_.back().arrival) {
      return InvalidArgumentError(LinePrefix(line_number) + "timestamp " +
                                  std::to_string(ToMillis(rec->arrival)) +
                                  " ms is earlier than the previous request's " +
                                  std::to_string(ToMillis(trace.records_.back().arrival)) + " ms");
    }
    Record r;
    r.arrival = rec->arrival;
    r.hash_begin = trace.hash_ids_.size();
    r.hash_count = static_cast<uint32_t>(rec->hash_ids.size());
    r.input_length = rec->input_length;
    r.output_length = rec->output_length;
    trace.hash_ids_.insert(trace.hash_ids_.end(), rec->hash_ids.begin(), rec->hash_ids.end());
    trace.records_.push_back(r);
  }
  if (options.sort_by_timestamp) {
    std::stable_sort(trace.records_.begin(), trace.records_.end(),
                     [](const Record& a, const Record& b) { return a.arrival < b.arrival; });
  }
  trace.ComputeSharing();
  return trace;
}

Result<Trace> Trace::LoadFile(const std::string& path, const TraceOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open trace file " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return NotFoundError("cannot read trace file " + path);
  Result<Trace> trace = Parse(text, options);
  if (!trace.ok()) return InvalidArgumentError(path + ": " + trace.status().message());
  return trace;
}

void Trace::ComputeSharing() {
  std::unordered_set<uint64_t> seen;
  seen.reserve(hash_ids_.size());
  repeated_blocks_ = 0;
  for (Record& r : records_) {
    const std::span<const uint64_t> ids(hash_ids_.data() + r.hash_begin, r.hash_count);
    size_t leading = 0;
    while (leading < ids.size() && seen.contains(ids[leading])) ++leading;
    r.shareable_tokens = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{leading} * block_tokens_, r.input_length));
    for (uint64_t id : ids) {
      if (!seen.insert(id).second) ++repeated_blocks_;
    }
  }
}

std::span<const uint64_t> Trace::hash_ids(size_t i) const {
  return {hash_ids_.data() + records_[i].hash_begin, records_[i].hash_count};
}

void Trace::AppendPrompt(size_t i, uint32_t vocab, std::vector<TokenId>& out) const {
  const Record& r = records_[i];
  out.reserve(out.size() + r.input_length);
  uint64_t left = r.input_length;
  for (uint64_t id : hash_ids(i)) {
    const uint64_t n = std::min<uint64_t>(left, block_tokens_);
    AppendContentTokens(MixIds(kBlockStream, id), 0, n, vocab, out);
    left -= n;
  }
  if (left > 0) AppendContentTokens(MixIds(kTailStream, i), 0, left, vocab, out);
}

double Trace::MeanInputLength() const {
  if (records_.empty()) return 0;
  double total = 0;
  for (const Record& r : records_) total += r.input_length;
  return total / static_cast<double>(records_.size());
}

double Trace::RepeatedBlockShare() const {
  if (hash_ids_.empty()) return 0;
  return static_cast<double>(repeated_blocks_) / static_cast<double>(hash_ids_.size());
}

Result<TraceWorkload> TraceWorkload::Create(std::shared_ptr<const Trace> trace,
                                            const TraceWorkloadOptions& options, Rng rng) {
  if (trace == nullptr) return InvalidArgumentError("trace workload: null trace");
  if (!(options.time_scale > 0) || !std::isfinite(options.time_scale)) {
    return InvalidArgumentError("trace workload: time_scale must be finite and > 0");
  }
  if (options.vocab <= kFirstContentToken) {
    return InvalidArgumentError("trace workload: vocab too small");
  }
  HEARSAY_RETURN_IF_ERROR(ValidateEntryOptions(options.entry));
  std::optional<ArrivalProcess> arrivals;
  if (options.arrivals.has_value()) {
    HEARSAY_ASSIGN_OR_RETURN(arrivals, ArrivalProcess::Create(*options.arrivals, rng.Fork()));
  }
  return TraceWorkload(std::move(trace), options, rng, std::move(arrivals));
}

TraceWorkload::TraceWorkload(std::shared_ptr<const Trace> trace,
                             const TraceWorkloadOptions& options, Rng rng,
                             std::optional<ArrivalProcess> arrivals)
    : trace_(std::move(trace)),
      options_(options),
      entry_(options.entry, rng.Fork()),
      arrivals_(std::move(arrivals)) {}

std::optional<Request> TraceWorkload::Next() {
  if (next_ >= trace_->size()) return std::nullopt;
  if (options_.max_requests > 0 && next_ >= options_.max_requests) return std::nullopt;
  const size_t i = next_++;
  Request r;
  r.id = i;
  if (arrivals_.has_value()) {
    r.arrival = arrivals_->Next();
  } else {
    // Scaling a non-decreasing sequence by a positive factor keeps it non-decreasing; the clamp
    // keeps a huge scale from overflowing (arrivals then saturate, still in order).
    const double ns =
        std::min(static_cast<double>(trace_->arrival(i).count()) * options_.time_scale, 9e18);
    r.arrival = Duration(static_cast<Duration::rep>(std::llround(ns)));
  }
  r.client = entry_.DrawClient();
  r.entry_node = entry_.NodeFor(r.client);
  trace_->AppendPrompt(i, options_.vocab, r.prompt);
  r.output_tokens = trace_->output_length(i);
  r.shareable_prefix_tokens = trace_->shareable_tokens(i);
  return r;
}

}  // namespace hearsay::workload
