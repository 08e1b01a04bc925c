#include "hearsay/sim/specialist_drift.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace hearsay::sim {

DriftStats SpecialistDrift(std::span<const RequestRecord> records, double window_ms,
                           uint32_t min_requests) {
  DriftStats d;
  if (!(window_ms > 0) || min_requests == 0) return d;
  // (subject, window) -> per-node counts. Ordered, so each subject's windows come in time order.
  std::map<std::pair<int32_t, int64_t>, std::map<int32_t, uint32_t>> cells;
  for (const RequestRecord& r : records) {
    if (r.subject < 0 || r.served_node < 0 || !std::isfinite(r.arrival_ms)) continue;
    const auto window = static_cast<int64_t>(std::floor(r.arrival_ms / window_ms));
    ++cells[{r.subject, window}][r.served_node];
  }
  int32_t last_subject = -1;
  int32_t last_specialist = -1;
  bool have_last = false;
  uint64_t changes = 0;
  double share_sum = 0;
  for (const auto& [key, counts] : cells) {
    uint32_t total = 0, top = 0;
    int32_t specialist = -1;
    for (const auto& [node, n] : counts) {
      total += n;
      if (n > top) {
        top = n;
        specialist = node;
      }
    }
    if (total < min_requests) continue;
    ++d.cells;
    share_sum += static_cast<double>(top) / total;
    if (have_last && last_subject == key.first) {
      ++d.transitions;
      changes += specialist != last_specialist ? 1 : 0;
    }
    have_last = true;
    last_subject = key.first;
    last_specialist = specialist;
  }
  if (d.transitions > 0) d.drift = static_cast<double>(changes) / d.transitions;
  if (d.cells > 0) d.specialist_share = share_sum / d.cells;
  return d;
}

}  // namespace hearsay::sim
