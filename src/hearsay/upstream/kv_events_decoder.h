// Decoder of vLLM's KV-cache event stream (vllm/distributed/kv_events.py, the ZMQ publisher).
//
// Wire format. Every message on the PUB socket has three frames: [topic, seq, payload]. `seq` is
// the batch's sequence number, 8 bytes big-endian (0, 1, 2, ... from the publisher's start; the
// replay socket's end marker is -1). `payload` is one msgspec-encoded msgpack batch:
//   batch  = [ts, [event...], dp_rank]                 (array_like; dp_rank nil or omitted)
//          | {"ts": ..., "events": [...], "data_parallel_rank": ...}   (newer vLLM: a map)
//   event  = ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
//             medium, lora_name, extra_keys, group_idx, ...]
//          | ["BlockRemoved", block_hashes, medium, group_idx, ...]
//          | ["AllBlocksCleared"]
//          | the same as maps tagged by "type" (newer vLLM encodes events as tagged maps).
// Versions differ in which trailing fields they send: every field after the required ones
// (BlockStored: block_hashes, parent_block_hash, token_ids, block_size; BlockRemoved:
// block_hashes) is optional, and unknown trailing fields or map keys are ignored. A block hash is
// an integer (signed or unsigned 64-bit: older vLLM, or VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES) or
// bytes (newer vLLM's default). Unknown event types are skipped and counted, so a newer engine's
// extra events do not make whole batches undecodable.
//
// Everything here is a pure function of the bytes: no I/O, no clock. Input is untrusted: any
// malformed input gives an error Status (DATA_LOSS) naming what is wrong, never a crash;
// kv_events_decoder_fuzz.cc checks that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::upstream {

// vLLM's identity of one KV block, as opaque bytes: 'i' + 8 bytes big-endian for an integer hash
// (signed values in two's complement), 'b' + the bytes for a bytes hash. Two hashes are the same
// block exactly when these strings are equal.
using EngineBlockHash = std::string;

struct KvBlockStored {
  std::vector<EngineBlockHash> block_hashes;
  std::optional<EngineBlockHash> parent_block_hash;  // none: the first block of a prompt
  std::vector<uint32_t> token_ids;                   // block_hashes.size() * block_size tokens
  uint64_t block_size = 0;
  std::optional<int64_t> lora_id;
  std::string medium;     // "" when not sent (GPU); "GPU", "CPU", ...
  std::string lora_name;  // "" when not sent
  // Some block carries extra hash inputs (multimodal hashes, cache salt, ...): the engine's hash
  // covers more than the tokens.
  bool has_extra_keys = false;
  std::optional<int64_t> group_idx;  // KV-cache group (hybrid models); none: the only group
};

struct KvBlockRemoved {
  std::vector<EngineBlockHash> block_hashes;
  std::string medium;
  std::optional<int64_t> group_idx;
};

struct KvAllBlocksCleared {};

using KvEvent = std::variant<KvBlockStored, KvBlockRemoved, KvAllBlocksCleared>;

struct KvEventBatch {
  uint64_t seq = 0;
  double ts = 0;
  std::vector<KvEvent> events;
  std::optional<int64_t> data_parallel_rank;
  // Events of a type this decoder does not know (skipped).
  size_t unknown_events = 0;
};

// The replay socket's end-of-replay sequence number (-1 as 8 big-endian bytes).
inline constexpr uint64_t kKvReplayEndSeq = ~uint64_t{0};

// The sequence frame: exactly 8 bytes, big-endian. DATA_LOSS otherwise.
Result<uint64_t> DecodeKvSeq(std::string_view seq_frame);
// The 8-byte big-endian frame for `seq` (replay requests, tests).
std::string EncodeKvSeq(uint64_t seq);

// Decodes one batch. DATA_LOSS naming the problem for a payload that is not one well-formed
// batch (bad msgpack, trailing bytes, wrong types, a missing required field, token_ids that do
// not fill the blocks, more than kMaxKvPayloadBytes).
Result<KvEventBatch> DecodeKvEventBatch(std::string_view seq_frame, std::string_view payload);

// The largest payload decoded (a batch is one scheduler step's events: far smaller).
inline constexpr size_t kMaxKvPayloadBytes = size_t{64} << 20;

}  // namespace hearsay::upstream
