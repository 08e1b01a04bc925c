// The measured cost of the signed-state operations (gossip/state_signing.h) on this machine, so
// the gossip experiment can price the work it counts (in modeled mode no cryptography runs).
//
// Thread-safety: MeasureSigningCosts runs the real operations a few thousand times; call it from
// one thread. It reads the process CPU clock: its figures vary from run to run, and are reported only
// when signatures are on.
#pragma once

namespace hearsay::sim::gossip_experiment {

struct SigningCosts {
  double sign_us = 0;     // one Ed25519 signature of a state statement (with its digest)
  double verify_us = 0;   // one Ed25519 verification of a state statement
  double element_us = 0;  // one element added to or removed from a state commitment (LtHash16)
};

SigningCosts MeasureSigningCosts();

}  // namespace hearsay::sim::gossip_experiment
