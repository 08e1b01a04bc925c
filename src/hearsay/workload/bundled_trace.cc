#include "hearsay/workload/bundled_trace.h"

namespace hearsay::workload {

std::string BundledTracePath() { return HEARSAY_DATA_DIR "/mooncake-synthetic.jsonl"; }

}  // namespace hearsay::workload
