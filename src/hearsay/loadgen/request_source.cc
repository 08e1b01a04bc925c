#include "hearsay/loadgen/request_source.h"

#include <cmath>
#include <utility>

#include "hearsay/workload/arrivals.h"
#include "hearsay/workload/chat_workload.h"
#include "hearsay/workload/mmlu_workload.h"
#include "hearsay/workload/trace_workload.h"

namespace hearsay::loadgen {

namespace {

workload::ArrivalOptions Poisson(double rate) {
  workload::ArrivalOptions a;
  a.kind = workload::ArrivalKind::kPoisson;
  a.rate_per_s = rate;
  return a;
}

workload::EntryOptions Entry(const WorkloadSpec& s) {
  workload::EntryOptions e;
  e.mode = s.entry;
  e.nodes = s.targets;
  e.clients = s.clients;
  return e;
}

}  // namespace

Status ValidateWorkloadSpec(const WorkloadSpec& s) {
  if (s.workload != "mmlu" && s.workload != "chat" && s.workload != "trace") {
    return InvalidArgumentError("workload must be mmlu, chat or trace, not '" + s.workload + "'");
  }
  if (s.workload == "trace" && s.trace_path.empty()) {
    return InvalidArgumentError("workload trace needs a trace file (--trace)");
  }
  if (s.requests < 1) return InvalidArgumentError("requests must be >= 1");
  if (!std::isfinite(s.rate_per_s) || s.rate_per_s <= 0) {
    return InvalidArgumentError("rate must be a finite number > 0 requests/s");
  }
  if (!std::isfinite(s.time_scale) || s.time_scale <= 0) {
    return InvalidArgumentError("time scale must be a finite number > 0");
  }
  if (!std::isfinite(s.zipf) || s.zipf < 0 || s.zipf > 10) {
    return InvalidArgumentError("zipf must be in [0, 10]");
  }
  if (s.variants < 1) return InvalidArgumentError("variants must be >= 1");
  if (s.targets < 1) return InvalidArgumentError("at least one target is needed");
  if (s.clients < 1) return InvalidArgumentError("clients must be >= 1");
  if (s.model.empty()) return InvalidArgumentError("model must not be empty");
  return OkStatus();
}

Result<RequestSource> RequestSource::Create(const WorkloadSpec& s) {
  HEARSAY_RETURN_IF_ERROR(ValidateWorkloadSpec(s));
  Rng rng(s.seed * 0x2545f4914f6cdd1dULL + 3);
  if (s.workload == "mmlu") {
    workload::MmluOptions o;
    o.num_requests = s.requests;
    o.popularity = workload::MmluPopularity::kZipf;
    o.zipf_s = s.zipf;
    o.variants = s.variants;
    o.output = s.cot ? workload::MmluOutput::kChainOfThought : workload::MmluOutput::kFaithful;
    o.arrivals = Poisson(s.rate_per_s);
    o.entry = Entry(s);
    HEARSAY_ASSIGN_OR_RETURN(workload::MmluWorkload w,
                             workload::MmluWorkload::Create(o, std::move(rng)));
    return RequestSource(s, s.api.value_or(ApiKind::kCompletions),
                         std::make_unique<workload::MmluWorkload>(std::move(w)), 0);
  }
  if (s.workload == "chat") {
    workload::ChatOptions o;
    o.system_zipf_s = s.zipf;
    // Conversations start at rate / MeanTurns(), so this yields about `requests` requests; the
    // driver stops at `requests` in any case.
    o.num_conversations = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(static_cast<double>(s.requests) / o.MeanTurns())));
    o.arrivals = Poisson(s.rate_per_s);
    o.entry = Entry(s);
    HEARSAY_ASSIGN_OR_RETURN(workload::ChatWorkload w,
                             workload::ChatWorkload::Create(o, std::move(rng)));
    return RequestSource(s, s.api.value_or(ApiKind::kChatCompletions),
                         std::make_unique<workload::ChatWorkload>(std::move(w)), o.max_turns);
  }
  HEARSAY_ASSIGN_OR_RETURN(workload::Trace trace,
                           workload::Trace::LoadFile(s.trace_path, workload::TraceOptions{}));
  if (trace.size() == 0) return InvalidArgumentError("the trace " + s.trace_path + " is empty");
  workload::TraceWorkloadOptions o;
  o.max_requests = s.requests;
  o.time_scale = s.time_scale;
  if (!s.trace_timestamps) o.arrivals = Poisson(s.rate_per_s);
  o.entry = Entry(s);
  HEARSAY_ASSIGN_OR_RETURN(
      workload::TraceWorkload w,
      workload::TraceWorkload::Create(std::make_shared<const workload::Trace>(std::move(trace)), o,
                                      std::move(rng)));
  return RequestSource(s, s.api.value_or(ApiKind::kCompletions),
                       std::make_unique<workload::TraceWorkload>(std::move(w)), 0);
}

RequestSource::RequestSource(const WorkloadSpec& spec, ApiKind api,
                             std::unique_ptr<workload::Workload> workload, uint32_t max_turns)
    : model_(spec.model), api_(api), workload_(std::move(workload)), transcript_(max_turns) {}

RequestSource::RequestSource(RequestSource&&) noexcept = default;
RequestSource& RequestSource::operator=(RequestSource&&) noexcept = default;
RequestSource::~RequestSource() = default;

std::optional<LoadRequest> RequestSource::Next() {
  std::optional<workload::Request> r = workload_->Next();
  if (!r) return std::nullopt;
  LoadRequest out;
  out.id = r->id;
  out.arrival = r->arrival;
  out.target = r->entry_node;
  out.path = std::string(ApiPath(api_));
  out.prompt_tokens = static_cast<uint32_t>(r->prompt.size());
  if (api_ == ApiKind::kChatCompletions) {
    out.body = RenderChatBody(model_, transcript_.Messages(*r), r->output_tokens);
  } else {
    out.body = RenderCompletionBody(model_, workload::RenderAsText(r->prompt), r->output_tokens);
  }
  return out;
}

}  // namespace hearsay::loadgen
