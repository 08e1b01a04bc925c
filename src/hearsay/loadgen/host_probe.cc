#include "hearsay/loadgen/host_probe.h"

#include "hearsay/loadgen/calibration.h"
#include "hearsay/loadgen/completion_calls.h"
#include "hearsay/loadgen/openai_body.h"

namespace hearsay::loadgen {
namespace {

Status Validate(const HostProbeOptions& o) {
  if (o.engines.empty()) return InvalidArgumentError("no engine to probe");
  if (o.model.empty()) return InvalidArgumentError("no model");
  if (o.prompt_words < 1 || o.prompt_words > 65536) {
    return InvalidArgumentError("prompt words: 1 to 65536");
  }
  if (o.rounds < 1 || o.rounds > 20) return InvalidArgumentError("rounds: 1 to 20");
  if (o.request_timeout <= Duration(0)) return InvalidArgumentError("the timeout must be positive");
  return OkStatus();
}

}  // namespace

Result<HostProbe> RunHostProbe(const HostProbeOptions& o) {
  HEARSAY_RETURN_IF_ERROR(Validate(o));
  uint64_t state = o.seed;
  auto call = [&](uint32_t engine) {
    return CompletionCall{o.engines[engine],
                          RenderCompletionBody(o.model, CalibrationPrompt(o.prompt_words, state),
                                               /*max_tokens=*/1)};
  };
  // Sends the calls to `engines` at once and adds their samples to `out`.
  auto sample = [&](const std::vector<uint32_t>& engines, std::vector<ProbeSample>& out) -> Status {
    std::vector<CompletionCall> calls;
    for (uint32_t e : engines) calls.push_back(call(e));
    const std::vector<RequestResult> results = CallAll(calls, "", o.request_timeout);
    for (size_t i = 0; i < results.size(); ++i) {
      const RequestResult& r = results[i];
      if (!r.ok() || !r.ttft || !r.has_usage) {
        return UnavailableError("probe of " + o.engines[engines[i]] + ": " +
                                (r.ok() ? "no usage in the answer"
                                        : ErrorKindName(r.error, r.http_status) + " " +
                                              r.error_message.substr(0, 200)));
      }
      out.push_back({engines[i], r.prompt_tokens, ToMillis(*r.ttft)});
    }
    return OkStatus();
  };
  HostProbe probe;
  std::vector<uint32_t> all;
  for (uint32_t e = 0; e < o.engines.size(); ++e) all.push_back(e);
  for (uint32_t round = 0; round < o.rounds; ++round) {
    for (uint32_t e : all) HEARSAY_RETURN_IF_ERROR(sample({e}, probe.alone));
    HEARSAY_RETURN_IF_ERROR(sample(all, probe.together));
  }
  return probe;
}

}  // namespace hearsay::loadgen
