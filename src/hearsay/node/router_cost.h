// RouterCostModel: the one conversion from the engine's iteration-time coefficients
// (engine::CostParams, engine/cost_model.h) to the router's prefill pricing
// (route::PrefillCostModel, route/cost_model.h). route/ sits below engine/ and cannot name it, so
// the composition layer converts: the daemon and the simulator both price routing from the cost
// preset of their own engine through this.
//
// Thread-safety: a pure function.
#pragma once

#include "hearsay/engine/cost_model.h"
#include "hearsay/route/cost_model.h"

namespace hearsay::node {

// The router's model of an engine with coefficients `p`: the same five terms, in the same units.
route::PrefillCostModel RouterCostModel(const engine::CostParams& p);

}  // namespace hearsay::node
