// DaemonConfig: everything `hearsay node` is configured with, its defaults, and how it is loaded.
//
// One table of settings (Settings()) drives both sources: each setting has a TOML key
// ("limits.max_body_bytes") and a flag ("--max-body-bytes"). A TOML file is applied first
// (ApplyToml), flags after it (ApplyFlag), so flags override the file; Validate() then checks the
// whole. Unknown TOML keys, wrong types and bad values are errors that name the key or flag.
// docs/operations.md lists every setting with its default (the same table).
//
// Thread-safety: plain value; the table is immutable.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::net {

// One `[[engine]]` entry: its settings as (flag name, value text) pairs, in the order given, as
// ApplyFlag takes them ("upstream", "http://..."). EngineEntryKeys() lists the keys an entry
// may hold and the flag each one sets.
struct EngineEntry {
  std::vector<std::pair<std::string, std::string>> settings;
  // The value of `flag` if the entry sets it, else null.
  const std::string* Find(std::string_view flag) const;
  friend bool operator==(const EngineEntry&, const EngineEntry&) = default;
};

struct DaemonConfig {
  // --- Addresses ---
  std::string http_listen = "127.0.0.1:8080";  // OpenAI API; port 0 = ephemeral
  std::string http_advertise;                  // announced to peers; default http_listen
  // Admin listener: with it /metrics, /cluster, /status, the console, /admin/* and /debug/* are
  // served only there, and http_listen serves only /v1/* and /health. Empty: all on http_listen.
  std::string admin_listen;
  std::string gossip_listen = "127.0.0.1:7946";  // UDP and TCP, same port; port 0 = ephemeral
  std::string gossip_advertise;                  // default gossip_listen
  std::vector<std::string> join;                 // seeds, "host:port"
  std::string cluster_name = "hearsay";          // bound into every gossip envelope
  // --- Node ---
  std::string node_id;  // default: hostname + ":" + gossip port
  std::string policy = "hearsay";
  std::string model = "hearsay-sim";
  std::vector<std::string> model_aliases;  // other names requests may use for `model`
  // Nodes whose engines run on the same processors (CPU engines of several nodes on one machine)
  // name the same group, and routing prices the prefill one adds as slowing the others
  // (gossip::Service::host_group). Empty: processors of its own.
  std::string host_group;
  uint64_t block_size = 16;  // tokens per prefix-cache block
  // Keying (docs/engines.md): every node serving one model must share these and block_size.
  std::string tokenizer = "bytes";     // bytes (built-in) or engine (the upstream's /tokenize)
  std::string chat_template = "auto";  // builtin, engine, or auto (engine where possible)
  std::string key_namespace;           // mixed into every block key (the hash seed)
  // Seeds all of the node's randomness (routing, gossip); 0: a random seed from the OS. The seed
  // in use is logged at start (event=start seed=...), so a run can be repeated.
  uint64_t seed = 0;
  // --- Engine ---
  std::string engine = "sim";
  std::string engine_preset = "h100-llama3-8b";
  uint64_t capacity_tokens = 262144;          // KV (prefix-cache) capacity of the engine, in tokens
  std::string upstream;                       // URL of an OpenAI-compatible engine (engine openai)
  std::string upstream_flavor = "generic";    // generic, llamacpp, vllm, sglang (docs/engines.md)
  std::string upstream_model;                 // model name sent upstream (default: the client's)
  bool upstream_slots_authoritative = false;  // llama.cpp /slots lists the whole cache
  bool upstream_slot_wait = false;  // price the wait for a slot when llama.cpp's are all busy
  // llama.cpp: hold a request sharing this many tokens with one in flight until that one ends
  // (upstream::OpenAiEngineOptions::prefix_hold_tokens); 0 off.
  uint64_t upstream_prefix_hold_tokens = 256;
  uint64_t upstream_queue_poll_ms = 1000;  // period of GET /metrics for the engine's queue; 0 off
  // Period of GET /v1/models for what the engine serves; 0: only until the first good read.
  uint64_t upstream_models_poll_ms = 10000;
  uint64_t tokenize_timeout_ms = 500;  // engine tokenizer: past it, bytes keying
  std::string kv_events;               // vLLM KV-event publisher, tcp://host:5557 (empty: not used)
  std::string kv_events_replay;        // its replay socket, tcp://host:5558 (empty: gaps reset)
  std::string kv_events_topic;         // its topic (empty: every topic)
  uint64_t upstream_first_token_timeout_ms = 30000;  // the upstream's first output, from the send
  uint64_t upstream_answer_timeout_ms = 300000;  // a whole answer asked in one piece, from the send
  // --- Security ---
  std::string cluster_key_file;
  std::string keyring_file;  // runtime key changes persist here (key_admin.h)
  // Signed origin state (docs/gossip-security.md): ed25519 or off; the seed of this node's
  // signing key (hearsay keygen), else one drawn at every start.
  std::string state_signatures = "ed25519";
  std::string signing_key_file;
  std::string block_key_secret_file;  // keys the block keys; empty: the primary key at start
  bool admin_allow_remote = false;    // serve /admin/keys beyond loopback
  std::string api_keys_file;          // API keys and tenants (api_keys.h); empty: open API
  bool insecure = false;
  // --- TLS (docs/security.md#tls) ---
  std::string tls_cert;  // PEM certificate chain of the API; empty: plain HTTP
  std::string tls_key;   // its PEM private key
  std::string tls_ca;    // cluster CA: forwards go over mutual TLS with node certificates
  uint64_t tls_handshake_timeout_ms = 5000;  // a TLS client must finish its handshake within this
  // --- Limits ---
  uint64_t max_body_bytes = 1 << 20;
  uint64_t max_header_bytes = 16 << 10;
  uint64_t max_concurrent_requests = 256;
  uint64_t header_timeout_ms = 10000;
  uint64_t read_timeout_ms = 30000;
  uint64_t idle_timeout_ms = 60000;
  uint64_t max_connections = 1024;                 // HTTP connections open at once
  uint64_t max_connections_per_client = 256;       // per client IP address
  uint64_t idle_timeout_under_pressure_ms = 5000;  // idle keep-alive, past 3/4 of max_connections
  uint64_t max_json_members = 10000;               // object members in one body, summed
  uint64_t max_json_array_items = 100000;          // array elements in one body, summed
  uint64_t max_json_depth = 64;                    // arrays and objects nested
  uint64_t gossip_connections_per_source = 32;     // gossip TCP connections per source IP
  uint64_t gossip_datagrams_per_source_per_s = 2000;  // 0: no limit
  uint64_t gossip_inbound_frame_bytes = 0;  // pre-auth pool for stream frames; 0: two max frames
  uint64_t max_tokens = 4096;               // the largest max_tokens a request may ask for
  uint64_t context_tokens = 8192;           // prompt + max_tokens must fit
  uint64_t forward_timeout_ms = 5000;       // a peer's first byte (headers) must come within this
  // ... or within this many times the expected time to first token there (at least the floor),
  // whichever is sooner; 0: the timeout alone (node::NodeOptions::forward_deadline_factor).
  uint64_t forward_deadline_factor = 4;
  uint64_t forward_deadline_floor_ms = 1000;
  uint64_t suspect_silence_ms = 3000;  // node::NodeOptions::suspect_silence
  // --- Runtime ---
  uint64_t io_threads = 1;
  uint64_t drain_timeout_ms = 10000;
  std::string log_level = "info";
  std::string records_path;   // decision records (node/decision_record.h); empty: none
  bool debug_faults = false;  // enables POST /debug/faults (tests only)
  // --- Engines ---
  // `[[engine]]` entries (TOML only): the node fronts one engine per entry, each configured by
  // the settings above overridden by the entry's own (EngineConfig). Empty: one engine, from
  // the settings above.
  std::vector<EngineEntry> engines;

  // Applies a TOML document; `source` names it in errors ("node.toml"). INVALID_ARGUMENT naming
  // the key for a syntax error, an unknown key, a wrong type or a value out of range.
  Status ApplyToml(std::string_view text, std::string_view source);
  // Reads and applies a TOML file; NOT_FOUND if it cannot be read.
  Status LoadTomlFile(const std::string& path);
  // Applies one flag by its name without dashes ("max-body-bytes") and its text value ("true"
  // for a bare boolean flag; a comma-separated list for lists).
  Status ApplyFlag(std::string_view flag, std::string_view value);
  // Checks the whole configuration (addresses parse, the policy exists and runs on the daemon,
  // the engine and preset exist, limits are consistent, a key file or --insecure is given).
  Status Validate() const;

  // The API address peers forward to, and the gossip address announced (advertise or listen).
  const std::string& api_address() const {
    return http_advertise.empty() ? http_listen : http_advertise;
  }
  // The configuration of `[[engine]]` entry `index` (< engines.size()): this one, without
  // entries, with the entry kind openai (an entry is an upstream unless it says `kind = "sim"`)
  // and the entry's settings applied.
  Result<DaemonConfig> EngineConfig(size_t index) const;
  // The configuration of every engine the node fronts: EngineConfig of each entry, or this one
  // alone without entries. Only for a configuration that Validate() accepted.
  std::vector<DaemonConfig> EngineConfigs() const;

  // "key=value ..." of the settings that differ from their defaults (every setting with `all`),
  // for the startup log (no secrets: only the key file path).
  std::string Describe(bool all = false) const;
};

enum class SettingKind : uint8_t { kString, kUInt, kBool, kList };

// One configurable value, as the table describes it.
struct SettingInfo {
  std::string_view key;   // TOML key, "section.name"
  std::string_view flag;  // flag name without dashes
  SettingKind kind;
  std::string_view help;
};

// One key of an `[[engine]]` entry and the flag it sets.
struct EngineEntryKey {
  std::string_view key;   // "upstream"
  std::string_view flag;  // "upstream"
};
std::span<const EngineEntryKey> EngineEntryKeys();

// Every setting, in documentation order.
std::span<const SettingInfo> Settings();
// The setting's current value in `config`, as text (lists comma-separated).
std::string SettingValue(const DaemonConfig& config, std::string_view key);

}  // namespace hearsay::net
