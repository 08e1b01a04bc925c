// Service: what a node serves (its engines: model, aliases, context length, LoRA adapters, and
// the tokenizer and block size its cache keys depend on) and the host group its engines compute
// in, gossiped as one versioned record of the node's state beside its load record
// (origin_store.h, wire.h).
//
// A node writes its service only when it changes (an engine restarted with another model, an
// adapter loaded); replicas hear of it through Listener::OnPeerService. A record is bounded
// (kMaxService* below) and every name is 1..kMaxServiceNameBytes of printable ASCII: the decoder
// refuses anything else (DATA_LOSS), and gossip::Node::SetService refuses to publish it
// (INVALID_ARGUMENT), so a record that one node accepts fits every peer's decoder.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/bytes.h"
#include "hearsay/common/status.h"

namespace hearsay::gossip {

// Limits of one service record (enforced by ValidateService and by the wire decoder).
inline constexpr size_t kMaxServiceEngines = 8;
inline constexpr size_t kMaxServiceAliases = 16;     // per engine
inline constexpr size_t kMaxServiceAdapters = 256;   // per engine
inline constexpr size_t kMaxServiceNameBytes = 256;  // model, alias and adapter names
inline constexpr size_t kMaxServiceKindBytes = 32;   // engine kind ("vllm")
inline constexpr size_t kMaxHostGroupBytes = 64;
// The whole record's encoded size: well inside one stream message (Config::stream_budget_bytes,
// 256 KiB), so a record never starves the rest of an anti-entropy exchange.
inline constexpr size_t kMaxServiceBytes = 64 * 1024;

// One engine behind a node.
struct EngineService {
  std::string kind;                   // "sim", "llamacpp", "vllm", "sglang", "openai"
  std::string model;                  // the canonical model name, as requests name it
  std::vector<std::string> aliases;   // other names requests may use for the model
  uint32_t context_tokens = 0;        // context length (0: unknown)
  std::vector<std::string> adapters;  // LoRA adapters served on top of the model
  // What the model's cache keys depend on: two engines agree on a prompt's keys only if both
  // are equal (0: unknown, which agrees only with 0).
  uint64_t tokenizer_fingerprint = 0;
  uint32_t block_tokens = 0;  // tokens per cache block
  friend bool operator==(const EngineService&, const EngineService&) = default;
};

// Everything one node serves. No engines: the node has not said (a single-model deployment).
struct Service {
  std::vector<EngineService> engines;
  // Members that name the same host group run their engines on the same processors (CPU engines
  // of several nodes on one machine), so the prefill one of them runs slows the others' (the
  // `hearsay` policy prices that: route/hearsay_policy.h). Empty: processors of its own.
  std::string host_group = {};
  friend bool operator==(const Service&, const Service&) = default;
};

// A node's service as a versioned record of its state (0: none written yet).
struct ServiceRecord {
  uint64_t version = 0;
  Service service;
  friend bool operator==(const ServiceRecord&, const ServiceRecord&) = default;
};

// True if `name` is 1..max_bytes of printable ASCII (0x20..0x7e).
bool IsServiceName(std::string_view name, size_t max_bytes = kMaxServiceNameBytes);
// OK, or INVALID_ARGUMENT naming the first limit `service` breaks (counts, names, total size).
Status ValidateService(const Service& service);
// The engine serving `name` (its model name or one of its aliases), or null.
const EngineService* FindModel(const Service& service, std::string_view name);
// True if `service` serves `model` (canonical name) with `adapter` (empty: the base model).
bool ServesModel(const Service& service, std::string_view model, std::string_view adapter);
// The record's wire encoding (wire.h carries it in a delta): version, then each engine's kind,
// model, aliases, context length, adapters, fingerprint (8 bytes) and block size, then the host
// group (a string, empty for none).
void PutServiceRecord(ByteWriter& w, const ServiceRecord& record);
// Reads one record; fails `r` if it breaks a limit above (or kMaxServiceBytes in all).
ServiceRecord ReadServiceRecord(ByteReader& r);
size_t EncodedSize(const ServiceRecord& record);

// A one-line description ("llamacpp:qwen2-0.5b(+2 aliases, 3 adapters)", then " on host group
// G" when it names one), for logs and status.
std::string ServiceSummary(const Service& service);

}  // namespace hearsay::gossip
