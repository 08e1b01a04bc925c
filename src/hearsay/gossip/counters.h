// Counters of one gossip::Node: traffic, and every message or delta dropped, by reason.
// Plain values, read by the owner (metrics) and by tests and experiments.
#pragma once

#include <array>
#include <cstdint>

namespace hearsay::gossip {

struct Counters {
  uint64_t msgs_sent = 0;
  uint64_t bytes_sent = 0;        // sealed bytes handed to the transport
  uint64_t stream_msgs_sent = 0;  // of msgs_sent, those too large for a datagram
  uint64_t msgs_received = 0;
  uint64_t bytes_received = 0;
  uint64_t send_failures = 0;               // the framer refused to seal (too large, no key)
  std::array<uint64_t, 16> sent_by_type{};  // indexed by MsgType
  std::array<uint64_t, 16> bytes_sent_by_type{};
  uint64_t update_bytes_sent = 0;  // of the bodies' bytes, piggybacked membership updates
  std::array<uint64_t, 16> received_by_type{};
  // Dropped incoming messages.
  uint64_t dropped_envelope = 0;   // the framer refused it (forged, replayed, malformed frame)
  uint64_t dropped_malformed = 0;  // the body failed to decode (truncated, oversized, bad value)
  uint64_t dropped_spoofed = 0;    // body names a sender the envelope does not prove
  uint64_t dropped_from_self = 0;
  uint64_t dropped_wrong_target = 0;  // a ping meant for another node (stale address)
  uint64_t dropped_after_leave = 0;
  // Anti-entropy.
  uint64_t deltas_applied = 0;
  uint64_t snapshots_applied = 0;
  uint64_t snapshots_sent = 0;
  uint64_t deltas_stale = 0;            // duplicate or older: ignored
  uint64_t entries_received = 0;        // cache entries in received run deltas
  uint64_t entries_redundant = 0;       // ... of which the replica already had (versions it knew)
  uint64_t deltas_gap = 0;              // base above what we know: refused
  uint64_t deltas_stride_mismatch = 0;  // a run at another stride, not holding the whole change
  uint64_t stride_runs_applied = 0;     // runs that changed a replica's stride (whole changes)
  uint64_t restrides = 0;               // own landmark stride changes (each re-publishes)
  uint64_t deltas_unknown = 0;          // origin not a live member of that generation: ignored
  uint64_t pulls_deduplicated = 0;      // an origin not asked of a peer: a pull was in flight
  uint64_t discovery_pulls = 0;         // push-pulls asked because a digest named an unknown member
  uint64_t syn_in_sync = 0;             // a Syn whose digest summary matched ours (no digest sent)
  // Signed state (Config::signatures).
  uint64_t deltas_unverified = 0;       // no signature, or its origin's key is not bound: dropped
  uint64_t deltas_forged = 0;           // the signature does not match the state: dropped
  uint64_t signing_key_conflicts = 0;   // another key for a (member, generation) already bound
  uint64_t signing_keys_confirmed = 0;  // keys bound as Config::key_source confirmed them
  uint64_t signatures_made = 0;         // own state statements signed
  uint64_t signatures_verified = 0;     // signatures checked (valid or not)
  uint64_t commitment_updates = 0;      // elements added to or removed from state commitments
  // Signed membership (member_statement.h): updates that would have changed this node's view,
  // refused. Unverified: no signature, or no key for the member (or the accuser) it names;
  // forged: the signature does not verify; capped: past the message's verification budget;
  // ahead: an accusation of a generation or incarnation above the one known here (only the
  // member's own signed statement can raise it).
  uint64_t member_updates_unverified = 0;
  uint64_t member_updates_forged = 0;
  uint64_t member_updates_capped = 0;
  uint64_t accusations_ahead = 0;
  uint64_t accusations_limited = 0;  // past the accuser's bucket (Config::accuser_rate): dropped
  uint64_t member_signatures_made = 0;      // own membership statements and accusations signed
  uint64_t member_signatures_verified = 0;  // membership signatures checked (in signatures_verified)
  // Membership.
  uint64_t probes = 0;
  uint64_t probe_failures = 0;
  uint64_t probes_heard = 0;      // probes without an ack whose target was heard from meanwhile
  uint64_t probes_relayed = 0;    // ... or whose newer state arrived through others meanwhile
  uint64_t refutations = 0;       // times this node refuted a suspicion about itself
  uint64_t evidence_notices = 0;  // suspicions told to a suspect whose newer state arrived
  uint64_t silence_probes = 0;    // probes out of turn: the target's state stopped arriving
};

}  // namespace hearsay::gossip
