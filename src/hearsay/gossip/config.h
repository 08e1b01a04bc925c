// gossip::Config: every knob of membership, failure detection and anti-entropy, with defaults
// chosen after memberlist/Lifeguard (probing) and chitchat/Serf (anti-entropy), and measured in
// docs/gossip.md.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "hearsay/env/time.h"
#include "hearsay/gossip/state_signing.h"
#include "hearsay/gossip/types.h"

namespace hearsay::gossip {

class SigningKeySource;

using namespace std::chrono_literals;

struct Config {
  // Where this node accepts forwarded requests (the daemon's HTTP address), announced with its
  // membership; empty when peers forward to its gossip address (the simulator).
  std::string api_address;
  // --- SWIM probing (one probe per interval; both scale with the local-health multiplier) ---
  Duration probe_interval = 1s;
  Duration probe_timeout = 500ms;  // direct ack deadline, then indirect probes
  int indirect_probes = 3;         // k helpers for ping-req
  // A probe also succeeds if, since it started, a version of the target's state above every one
  // seen here before arrived through anyone, in a delta or named in a digest (relayed liveness
  // evidence, as chitchat's heartbeat-based detector uses; catching up on older writes does not
  // count). A dead node writes nothing, so this delays a real detection by at most the time news
  // of its last writes takes to spread; under heavy loss it keeps healthy members from being
  // accused.
  bool relayed_evidence = true;
  // A member whose newer state has stopped arriving (silent for more than silence_probe_mult x
  // its smoothed arrival gap, and at least silence_probe_min) is probed next, once per silence,
  // rather than on its round-robin turn; 0 turns this off. Silence is only a hint: the probe,
  // as always, is what accuses. Under cache churn a member's state reaches every peer several
  // times a second, so a dead one is probed within about a second of its last writes spreading
  // instead of when some prober's turn comes (about one probe of it a second cluster-wide).
  double silence_probe_mult = 4;
  Duration silence_probe_min = 1s;
  // --- Lifeguard suspicion: min = suspicion_mult * max(1, log10(n)) * probe_interval ---
  // 3 (memberlist's local-network value; its LAN default is 4): 6 s at N = 100. A suspicion of
  // a healthy member is refuted within 0.5 s (p99) at N = 100 and 50% loss, so 6 s keeps a
  // wide margin, and the kill of a node is declared within 10 s (docs/gossip.md, "Membership").
  double suspicion_mult = 3.0;
  double suspicion_max_mult = 6.0;  // the timeout starts at max_mult * min and shrinks
  int max_local_health = 8;         // cap of the local-health score (multiplier = score + 1)
  // A refuting node tells this many members directly; about as many hearers of an accusation
  // pass it to the suspect directly (each with probability refute_fanout / n).
  int refute_fanout = 8;
  // With signed membership, the suspicions one member's accusations may start here: a token
  // bucket per accuser, refilled at accuser_rate per probe interval up to accuser_burst. An honest
  // member accuses when a probe of its own fails, about once a probe interval at most (its round
  // and the silence probes), so a member accusing faster is making accusations up: past its
  // bucket they neither start a suspicion here nor are relayed. Each would cost its victim a
  // refutation and the cluster its broadcast. Unsigned clusters cannot tell who accuses (any key
  // holder can name any accuser) and have no limit. 0: no limit.
  double accuser_rate = 1.0;
  int accuser_burst = 4;
  // --- Dissemination of membership updates (piggybacked on every message) ---
  int retransmit_mult = 6;              // each update is sent retransmit_mult * log10(n+1) times
  size_t piggyback_budget_bytes = 400;  // at most this much of each message carries updates
  // --- Anti-entropy ---
  Duration gossip_interval = 200ms;
  // Syns per gossip interval (each to a random member): gossip_fanout (Serf's 3), plus one once
  // the cluster has more than large_cluster_members. An epidemic needs more rounds as the cluster
  // grows; at N = 100 and 50% loss the fourth Syn takes convergence from ~2.1 to ~1.8 s and summary
  // accuracy above 0.95 for ~4% more bytes (deltas are received once either way; the extra cost is
  // digests). Small clusters, where the routing experiments run, keep 3 (docs/gossip.md,
  // "Anti-entropy").
  int gossip_fanout = 3;
  size_t large_cluster_members = 64;
  Duration push_pull_interval = 5s;         // full membership exchange with one random peer
  Duration reconnect_interval = 2s;         // push-pull to one dead member, to heal partitions
  Duration heartbeat_interval = 2s;         // republish load (heartbeat+1) if nothing changed
  Duration join_retry_interval = 1s;        // re-contact seeds not yet known as members...
  Duration join_retry_max_interval = 30s;   // ...backing off to this once any member is known
  size_t datagram_budget_bytes = 1400;      // body budget of one kDatagram message
  size_t stream_budget_bytes = 256 * 1024;  // body budget of one kStream message
  // Per origin, tombstones kept before the oldest are collected (peers behind them get a
  // snapshot). At least this many, or as many as live entries, whichever is larger.
  size_t min_tombstones = 256;
  // --- Cache summary: advertise only blocks whose index is a multiple of the stride ---
  // The base stride. Each node publishes at LandmarkStrideRule{landmark_stride,
  // landmark_budget_members, max_landmark_stride}.Next(cluster size it sees): the base up to
  // landmark_budget_members members, then doubling each time the cluster doubles, so the summary
  // entries each node receives (~ N x E / stride) stay at what landmark_budget_members nodes send
  // at the base stride (at E = 1,000: ~1 KB/s of entries per origin, ~110 KB/s per node at
  // 50% loss, docs/gossip.md "Cache summary: landmarks"). 128 keeps every cluster up to 128 members
  // at 16 blocks (the routing experiments and the N <= 128 figures). The stride travels with every
  // delta, and peers match each origin at its own stride (prefix::PeerIndex::MatchStrided).
  uint32_t landmark_stride = 16;
  size_t landmark_budget_members = 128;
  uint32_t max_landmark_stride = 4096;
  // --- Signed origin state (state_signing.h, docs/gossip-security.md "Signed origin state") ---
  // Off: state is trusted as any cluster member relays it. Ed25519: every node signs its own
  // state and applies another origin's state only with that origin's valid signature. Modeled
  // (simulator): the bytes and the count of verifications, without cryptography.
  SignatureMode signatures = SignatureMode::kOff;
  // With signatures, a node publishes its writes (signed) at most once per interval: a write
  // reaches peers up to this much later, and each peer receives one signature (64 bytes) per
  // origin per interval at most. The interval is sign_interval in clusters of sign_budget_members
  // or more, and shrinks with the cluster below that (to one gossip interval at the least), so
  // the signatures a node receives per second stay at most what sign_budget_members origins send,
  // and a small cluster's loads and caches reach peers at the gossip's pace: at 4 nodes a 1 s
  // interval made hearsay's mean TTFT 2.7% worse than unsigned state (the paper experiment's base
  // point). 1 s at 64 members and up keeps the signatures within 10% of the bytes (figures in
  // docs/gossip-security.md).
  Duration sign_interval = 1s;
  size_t sign_budget_members = 64;
  // The seed of this node's signing key (SigningKey::FromSeed); without it, Start derives one
  // from the node's rng (simulations). The daemon gives it from security.signing_key_file, or
  // draws it from the OS at every start.
  std::optional<std::array<uint8_t, kSigningSeedBytes>> signing_seed;
  // Where members' keys come from (not owned; outlives the node). Null: a peer binds the first
  // key announced for each (member, generation). Set (the daemon does under mutual TLS): only the
  // key the source confirms is bound, and an announced key that differs is counted as a conflict.
  SigningKeySource* key_source = nullptr;
  // With signatures, membership updates are signed too (member_statement.h), and a node checks
  // at most this many of their signatures per message (more are dropped unchecked and counted;
  // the rest reach it again from other members). Only an update that would change this node's
  // view is checked. A datagram holds about ten signed updates; a push-pull lists every member
  // once, so its budget is larger: 1,024 checks cost ~60 ms of CPU.
  size_t member_verifications_per_message = 16;
  size_t member_verifications_per_push_pull = 1024;
  // --- Load ---
  OverloadThresholds overload;
};

}  // namespace hearsay::gossip
