#include "hearsay/node/router_cost.h"

namespace hearsay::node {

route::PrefillCostModel RouterCostModel(const engine::CostParams& p) {
  route::PrefillCostModel m;
  m.t0_ms = p.t0_ms;
  m.a_ms_per_token = p.a_ms_per_token;
  m.b_ms_per_token2 = p.b_ms_per_token2;
  m.d1_ms_per_seq = p.d1_ms_per_seq;
  m.d2_ms_per_token = p.d2_ms_per_ctx_token;
  return m;
}

}  // namespace hearsay::node
