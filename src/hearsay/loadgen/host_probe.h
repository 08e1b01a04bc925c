// Host probe: how fast engines that share one host prefill, alone and all at once, for the twin
// of `hearsay demo --engine llama`, whose four CPU servers share the machine's cores
// (docs/twin.md, "llama.cpp: the twin of hearsay demo --engine llama").
//
// Each round sends one fresh prompt (CalibrationPrompt: never cached, max_tokens 1, streamed) to
// each engine in turn, one at a time, then one to every engine at once. The time to the first
// token of each is sampled with the engine's count of its prompt tokens. Run it while nothing else
// loads the engines.
//
// Thread-safety: RunHostProbe blocks the calling thread and owns its I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"

namespace hearsay::loadgen {

struct HostProbeOptions {
  std::vector<std::string> engines;  // "host:port" each, at least one
  std::string model;                 // the "model" of every request
  uint32_t prompt_words = 300;       // 1 to 65536
  uint32_t rounds = 3;               // 1 to 20
  Duration request_timeout = std::chrono::seconds(30);
  uint64_t seed = 1;  // of the prompts' words
};

struct ProbeSample {
  uint32_t engine = 0;         // index into HostProbeOptions::engines
  uint32_t prompt_tokens = 0;  // the engine's count (usage)
  double ttft_ms = 0;
};

struct HostProbe {
  std::vector<ProbeSample> alone;     // one engine at a time
  std::vector<ProbeSample> together;  // every engine at once
};

// The probe (see the file comment). INVALID_ARGUMENT for bad options; UNAVAILABLE naming the first
// request that failed or came back without usage (every sample needs the engine's token count).
Result<HostProbe> RunHostProbe(const HostProbeOptions& options);

}  // namespace hearsay::loadgen
