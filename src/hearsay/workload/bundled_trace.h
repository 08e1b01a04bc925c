// The trace the repository ships (data/mooncake-synthetic.jsonl, described in data/README.md).
//
// Its path is the source tree's, fixed when the library is built, so a binary built from a
// checkout finds it from any working directory; a binary copied elsewhere may not (callers say
// so with the path).
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <string>

namespace hearsay::workload {

// The absolute path of data/mooncake-synthetic.jsonl in the source tree this was built from.
std::string BundledTracePath();

// Its number of requests (one per line), which tests check the file against.
inline constexpr size_t kBundledTraceRequests = 3993;

}  // namespace hearsay::workload
