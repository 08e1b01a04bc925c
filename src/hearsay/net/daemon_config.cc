#include "hearsay/net/daemon_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <variant>

#include "hearsay/api/api_error.h"
#include "hearsay/api/model_name.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/gossip/service.h"
#include "hearsay/gossip/wire.h"
#include "hearsay/http/host_port.h"
#include "hearsay/net/engine_entries.h"
#include "hearsay/net/prompt_tokenizer.h"
#include "hearsay/route/registry.h"
#include "hearsay/upstream/kv_events_subscriber.h"
#include "hearsay/upstream/openai_engine_options.h"
#include "hearsay/upstream/upstream_url.h"

namespace hearsay::net {

using http::FormatHostPort;
using http::HostPort;
using http::ParseHostPort;
namespace {

using Member = std::variant<std::string DaemonConfig::*, uint64_t DaemonConfig::*,
                            bool DaemonConfig::*, std::vector<std::string> DaemonConfig::*>;

struct Setting {
  SettingInfo info;
  Member member;
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
};

constexpr uint64_t kHour = 3600 * 1000;

const std::vector<Setting>& Table() {
  using K = SettingKind;
  using C = DaemonConfig;
  static const std::vector<Setting> table = {
      {{"http.listen", "http", K::kString, "HTTP API listen address (port 0: ephemeral)"},
       &C::http_listen},
      {{"http.advertise", "advertise-http", K::kString,
        "API address announced to peers, who forward there (default: http.listen)"},
       &C::http_advertise},
      {{"http.admin_listen", "admin-http", K::kString,
        "separate listener for /metrics, /cluster, /status, the console (GET /), /admin and "
        "/debug, which the API port then refuses (404); it serves TLS when the API does, with "
        "the same certificate (port 0: ephemeral; empty: all on http.listen)"},
       &C::admin_listen},
      {{"gossip.listen", "gossip", K::kString,
        "gossip listen address, UDP and TCP on one port (port 0: ephemeral)"},
       &C::gossip_listen},
      {{"gossip.advertise", "advertise-gossip", K::kString,
        "gossip address announced to peers (default: gossip.listen)"},
       &C::gossip_advertise},
      {{"gossip.join", "join", K::kList, "seed nodes' gossip addresses, host:port[,...]"},
       &C::join},
      {{"gossip.cluster_name", "cluster-name", K::kString,
        "cluster name bound into every gossip envelope; nodes of other clusters are ignored"},
       &C::cluster_name},
      {{"gossip.max_connections_per_source", "gossip-connections-per-source", K::kUInt,
        "incoming gossip TCP connections from one source IP"},
       &C::gossip_connections_per_source,
       1,
       1 << 16},
      {{"gossip.max_datagrams_per_source_per_s", "gossip-datagrams-per-source-per-s", K::kUInt,
        "gossip datagrams accepted per second from one source IP (0: no limit)"},
       &C::gossip_datagrams_per_source_per_s,
       0,
       1 << 24},
      {{"gossip.inbound_frame_pool_bytes", "gossip-inbound-frame-pool-bytes", K::kUInt,
        "bytes of incoming gossip stream frames held at once, before they are authenticated "
        "(0: two of the largest frames, about 32 MiB)"},
       &C::gossip_inbound_frame_bytes,
       0,
       uint64_t{1} << 32},
      {{"node.id", "node-id", K::kString, "unique node name (default: hostname:gossip-port)"},
       &C::node_id},
      {{"node.policy", "policy", K::kString, "routing policy (hearsay, paper, least-loaded, ...)"},
       &C::policy},
      {{"node.model", "model", K::kString,
        "model name served (its canonical name in the pool; 1-256 bytes of printable ASCII)"},
       &C::model},
      {{"node.model_aliases", "model-aliases", K::kList,
        "other names requests may use for node.model, name[,...] (at most 16)"},
       &C::model_aliases},
      {{"node.host_group", "host-group", K::kString,
        "name shared by the nodes whose engines run on the same processors (CPU engines of "
        "several nodes on one machine): routing then prices the prefill a cache miss adds as "
        "slowing all of them (1-64 bytes of printable ASCII; default none)"},
       &C::host_group},
      {{"node.block_size", "block-size", K::kUInt, "tokens per prefix-cache block"},
       &C::block_size,
       1,
       4096},
      {{"node.tokenizer", "tokenizer", K::kString,
        "how prompts become block keys: bytes (built-in tokenizer) or engine (the upstream's own "
        "/tokenize; engine openai with flavor llamacpp, vllm or sglang). Every node must agree"},
       &C::tokenizer},
      {{"node.chat_template", "chat-template", K::kString,
        "how chat messages become a prompt for keying: builtin (ChatML), engine (the upstream's "
        "own template: llamacpp, vllm) or auto (engine when the tokenizer is engine and the "
        "upstream can, else builtin)"},
       &C::chat_template},
      {{"node.key_namespace", "key-namespace", K::kString,
        "extra seed mixed into every block key (nodes with different values never share keys)"},
       &C::key_namespace},
      {{"node.seed", "seed", K::kUInt,
        "seed of the node's randomness (random policy choices, gossip); 0: random from the OS. "
        "Logged at start (seed=) so a run can be repeated"},
       &C::seed},
      {{"engine.kind", "engine", K::kString,
        "inference engine: sim (embedded simulator) or openai (an OpenAI-compatible server at "
        "engine.upstream; docs/engines.md)"},
       &C::engine},
      {{"engine.preset", "engine-preset", K::kString,
        "engine's cost model: a preset name (h100-llama3-8b, a100-llama3-8b, consumer, "
        "llama-tiny-cpu) or coefficients t0=,a=,b=,d1=,d2= as `hearsay calibrate` prints them; "
        "the simulated engine runs at it, an upstream's routing starts from it"},
       &C::engine_preset},
      {{"engine.capacity_tokens", "capacity-tokens", K::kUInt,
        "engine's KV (prefix-cache) capacity, in tokens (for openai: the upstream's, as configured "
        "there)"},
       &C::capacity_tokens,
       1,
       (uint64_t{1} << 32) - 1},
      {{"engine.upstream", "upstream", K::kString,
        "URL of the OpenAI-compatible engine, http://host:port (engine openai)"},
       &C::upstream},
      {{"engine.upstream_flavor", "upstream-flavor", K::kString,
        "which server is upstream: generic, llamacpp, vllm or sglang (what evidence it reports)"},
       &C::upstream_flavor},
      {{"engine.upstream_model", "upstream-model", K::kString,
        "model name sent to the upstream (default: the client's)"},
       &C::upstream_model},
      {{"engine.upstream_slots_authoritative", "upstream-slots-authoritative", K::kBool,
        "llama.cpp's /slots lists its whole cache (llama-server --cache-ram 0)"},
       &C::upstream_slots_authoritative},
      {{"engine.upstream_slot_wait", "upstream-slot-wait", K::kBool,
        "llama.cpp: when /slots shows every slot busy, add the soonest slot's remaining decode "
        "to the queue wait the node reports and prices"},
       &C::upstream_slot_wait},
      {{"engine.upstream_prefix_hold_tokens", "upstream-prefix-hold-tokens", K::kUInt,
        "llama.cpp: hold a request sharing at least this many prompt tokens with one in flight "
        "there until that one ends, so it reuses the prefix instead of computing it beside it "
        "(at most the prefix's prefill time); 0: never hold"},
       &C::upstream_prefix_hold_tokens,
       0,
       uint64_t{1} << 24},
      {{"engine.upstream_queue_poll_ms", "upstream-queue-poll-ms", K::kUInt,
        "period of GET /metrics (llamacpp with --metrics, vllm, sglang) and llama.cpp's "
        "GET /slots for the engine's own queue; 0: count only the node's own requests"},
       &C::upstream_queue_poll_ms,
       0,
       kHour},
      {{"engine.upstream_models_poll_ms", "upstream-models-poll-ms", K::kUInt,
        "period of GET /v1/models for what the engine serves (models, adapters); 0: read only "
        "until the first good answer"},
       &C::upstream_models_poll_ms,
       0,
       kHour},
      {{"engine.tokenize_timeout_ms", "tokenize-timeout-ms", K::kUInt,
        "engine tokenizer: longest wait for the upstream's /tokenize before falling back to "
        "bytes keying for that request"},
       &C::tokenize_timeout_ms,
       1,
       kHour},
      {{"engine.kv_events", "kv-events", K::kString,
        "vLLM's KV-cache event publisher, tcp://host:5557 (engine openai; docs/engines.md)"},
       &C::kv_events},
      {{"engine.kv_events_replay", "kv-events-replay", K::kString,
        "vLLM's KV-event replay socket, tcp://host:5558 (without it a lost batch resets the view)"},
       &C::kv_events_replay},
      {{"engine.kv_events_topic", "kv-events-topic", K::kString,
        "topic of vLLM's KV events (its kv-events-config topic; empty: every topic)"},
       &C::kv_events_topic},
      {{"engine.upstream_first_token_timeout_ms", "upstream-first-token-timeout-ms", K::kUInt,
        "the upstream's first output must come within this, else the request fails and counts "
        "against its health (slow CPU engines with long prompts need more)"},
       &C::upstream_first_token_timeout_ms,
       1,
       kHour},
      {{"engine.upstream_answer_timeout_ms", "upstream-answer-timeout-ms", K::kUInt,
        "a request whose client does not stream is asked of the upstream in one piece: the whole "
        "answer, generation included, must come within this"},
       &C::upstream_answer_timeout_ms,
       1,
       kHour},
      {{"security.cluster_key_file", "cluster-key-file", K::kString,
        "cluster key file (hearsay keygen); required unless insecure"},
       &C::cluster_key_file},
      {{"security.keyring_file", "keyring-file", K::kString,
        "this node's keyring state: keys installed, used or removed at runtime (hearsay keys) are "
        "written here and read back at start; seeded from the cluster key file when missing"},
       &C::keyring_file},
      {{"security.state_signatures", "state-signatures", K::kString,
        "ed25519: this node signs its own gossiped state (cache summary, load, models) and "
        "applies a member's state only with that member's signature, so a key holder cannot "
        "forge another member's state; off: state is trusted as any member relays it. Every "
        "node of a cluster must use the same value"},
       &C::state_signatures},
      {{"security.signing_key_file", "signing-key-file", K::kString,
        "a key file (hearsay keygen) whose key seeds this node's Ed25519 signing key; without "
        "it a new signing key is drawn at every start (peers bind a key per node generation)"},
       &C::signing_key_file},
      {{"security.block_key_secret_file", "block-key-secret-file", K::kString,
        "a key file (hearsay keygen) whose first key keys the prefix-cache block keys, the same "
        "on every node; it never rotates, so block keys survive cluster-key rotations. Without "
        "it they are keyed with the primary cluster key at start"},
       &C::block_key_secret_file},
      {{"security.admin_allow_remote", "admin-allow-remote", K::kBool,
        "serve the key admin requests (/admin/keys) to non-loopback clients too; they still need "
        "an admin authenticator, but keys then cross the network in cleartext HTTP"},
       &C::admin_allow_remote},
      {{"api.keys_file", "api-keys-file", K::kString,
        "API keys (hearsay apikey create): with it every /v1 request needs a key, whose tenant "
        "gets its own cache namespace and limits; reloaded on SIGHUP and when it changes"},
       &C::api_keys_file},
      {{"security.insecure", "insecure", K::kBool,
        "run without a cluster key: gossip and forwards are unauthenticated (testing only)"},
       &C::insecure},
      {{"tls.cert", "tls-cert", K::kString,
        "PEM certificate (chain) the API serves HTTPS with, with tls.key; reloaded on SIGHUP "
        "(new connections get it, open ones stay); empty: plain HTTP"},
       &C::tls_cert},
      {{"tls.key", "tls-key", K::kString, "PEM private key of tls.cert (unencrypted)"},
       &C::tls_key},
      {{"tls.ca", "tls-ca", K::kString,
        "PEM cluster CA (hearsay ca init): forwards between nodes use mutual TLS, each node "
        "showing its certificate (tls.cert, from hearsay ca issue), and a peer request is "
        "accepted only from a certificate of this CA naming a live member, the sender"},
       &C::tls_ca},
      {{"tls.handshake_timeout_ms", "tls-handshake-timeout-ms", K::kUInt,
        "a TLS client must finish its handshake within this after connecting, else it is "
        "closed (a slow handshake cannot hold a connection)"},
       &C::tls_handshake_timeout_ms,
       1,
       kHour},
      {{"limits.max_body_bytes", "max-body-bytes", K::kUInt, "largest request body (413 above)"},
       &C::max_body_bytes,
       1,
       uint64_t{1} << 30},
      {{"limits.max_header_bytes", "max-header-bytes", K::kUInt,
        "largest request header block (431 above)"},
       &C::max_header_bytes,
       1024,
       1 << 20},
      {{"limits.max_concurrent_requests", "max-concurrent-requests", K::kUInt,
        "completions in flight at once, client and peer (429 above)"},
       &C::max_concurrent_requests,
       1,
       1 << 20},
      {{"limits.header_timeout_ms", "header-timeout-ms", K::kUInt,
        "time to receive a request's headers"},
       &C::header_timeout_ms,
       1,
       kHour},
      {{"limits.read_timeout_ms", "read-timeout-ms", K::kUInt, "time to receive a request's body"},
       &C::read_timeout_ms,
       1,
       kHour},
      {{"limits.idle_timeout_ms", "idle-timeout-ms", K::kUInt,
        "keep-alive connection idle time before it is closed"},
       &C::idle_timeout_ms,
       1,
       kHour},
      {{"limits.max_connections", "max-connections", K::kUInt,
        "HTTP connections open at once; at the cap the oldest idle keep-alive one is closed for "
        "a new one, else the new one gets 503"},
       &C::max_connections,
       1,
       1 << 20},
      {{"limits.max_connections_per_client", "max-connections-per-client", K::kUInt,
        "HTTP connections open at once from one client IP address (503 above)"},
       &C::max_connections_per_client,
       1,
       1 << 20},
      {{"limits.idle_timeout_under_pressure_ms", "idle-timeout-under-pressure-ms", K::kUInt,
        "idle keep-alive timeout once 3/4 of max_connections are open"},
       &C::idle_timeout_under_pressure_ms,
       1,
       kHour},
      {{"limits.max_json_members", "max-json-members", K::kUInt,
        "object members in one request body, summed over its objects (400 above)"},
       &C::max_json_members,
       16,
       1 << 24},
      {{"limits.max_json_array_items", "max-json-array-items", K::kUInt,
        "array elements in one request body, summed over its arrays (400 above)"},
       &C::max_json_array_items,
       16,
       1 << 24},
      {{"limits.max_json_depth", "max-json-depth", K::kUInt,
        "arrays and objects nested in one request body (400 above)"},
       &C::max_json_depth,
       4,
       1024},
      {{"limits.max_tokens", "max-tokens", K::kUInt, "largest max_tokens a request may ask for"},
       &C::max_tokens,
       1,
       1 << 20},
      {{"limits.context_tokens", "context-tokens", K::kUInt,
        "context window: prompt + max_tokens must fit (400 above)"},
       &C::context_tokens,
       1,
       1 << 24},
      {{"limits.forward_timeout_ms", "forward-timeout-ms", K::kUInt,
        "a forwarded request's first byte must come within this, else it is retried elsewhere"},
       &C::forward_timeout_ms,
       1,
       kHour},
      {{"limits.forward_deadline_factor", "forward-deadline-factor", K::kUInt,
        "a sim-engine node also retries a forward elsewhere after this many times its expected "
        "time to first token there (0: only the forward timeout)"},
       &C::forward_deadline_factor,
       0,
       1000},
      {{"limits.forward_deadline_floor_ms", "forward-deadline-floor-ms", K::kUInt,
        "the shortest first-token deadline forward_deadline_factor gives a forward"},
       &C::forward_deadline_floor_ms,
       1,
       kHour},
      {{"limits.suspect_silence_ms", "suspect-silence-ms", K::kUInt,
        "a forward to a member gossip suspects is ended after this long without a byte from it "
        "(retried, or the stream ends with an error event); 0: only when it is declared dead"},
       &C::suspect_silence_ms,
       0,
       kHour},
      {{"runtime.io_threads", "io-threads", K::kUInt,
        "threads for HTTP and gossip sockets; 0 runs them on the core thread (no thread hops)"},
       &C::io_threads,
       0,
       64},
      {{"runtime.drain_timeout_ms", "drain-timeout-ms", K::kUInt,
        "on SIGTERM, how long in-flight requests may finish"},
       &C::drain_timeout_ms,
       0,
       kHour},
      {{"runtime.log_level", "log-level", K::kString,
        "trace, debug, info, warn, error, critical or off"},
       &C::log_level},
      {{"runtime.records", "records", K::kString,
        "write one decision record per request routed or served here to this file (JSON lines)"},
       &C::records_path},
      {{"debug.faults", "debug-faults", K::kBool,
        "enable POST /debug/faults (fault injection for tests; never in production)"},
       &C::debug_faults},
  };
  return table;
}

const Setting* FindByKey(std::string_view key) {
  for (const Setting& s : Table()) {
    if (s.info.key == key) return &s;
  }
  return nullptr;
}

const Setting* FindByFlag(std::string_view flag) {
  for (const Setting& s : Table()) {
    if (s.info.flag == flag) return &s;
  }
  return nullptr;
}

std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

Status CheckRange(const Setting& s, uint64_t v, const std::string& where) {
  if (v < s.min || v > s.max) {
    return InvalidArgumentError(where + ": " + std::to_string(v) + " is out of range [" +
                                std::to_string(s.min) + ", " + std::to_string(s.max) + "]");
  }
  return OkStatus();
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

// Applies one TOML value to the setting.
Status ApplyTomlValue(DaemonConfig& c, const Setting& s, const toml::node& node,
                      const std::string& where) {
  switch (s.info.kind) {
    case SettingKind::kString: {
      const auto* v = node.as_string();
      if (v == nullptr) return InvalidArgumentError(where + ": expected a string");
      c.*std::get<std::string DaemonConfig::*>(s.member) = v->get();
      return OkStatus();
    }
    case SettingKind::kUInt: {
      const auto* v = node.as_integer();
      if (v == nullptr) return InvalidArgumentError(where + ": expected an integer");
      if (v->get() < 0) return InvalidArgumentError(where + ": must not be negative");
      const uint64_t u = static_cast<uint64_t>(v->get());
      HEARSAY_RETURN_IF_ERROR(CheckRange(s, u, where));
      c.*std::get<uint64_t DaemonConfig::*>(s.member) = u;
      return OkStatus();
    }
    case SettingKind::kBool: {
      const auto* v = node.as_boolean();
      if (v == nullptr) return InvalidArgumentError(where + ": expected true or false");
      c.*std::get<bool DaemonConfig::*>(s.member) = v->get();
      return OkStatus();
    }
    case SettingKind::kList: {
      std::vector<std::string> items;
      if (const auto* str = node.as_string()) {
        items = SplitList(str->get());
      } else if (const auto* arr = node.as_array()) {
        for (const toml::node& e : *arr) {
          const auto* item = e.as_string();
          if (item == nullptr) return InvalidArgumentError(where + ": expected strings");
          items.push_back(item->get());
        }
      } else {
        return InvalidArgumentError(where + ": expected an array of strings");
      }
      c.*std::get<std::vector<std::string> DaemonConfig::*>(s.member) = std::move(items);
      return OkStatus();
    }
  }
  return InternalError("unreachable");
}

Status ApplyTable(DaemonConfig& c, const toml::table& table, const std::string& prefix,
                  std::string_view source) {
  for (const auto& [k, node] : table) {
    const std::string key =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    const std::string where = std::string(source) + ": key " + Quote(key);
    if (const Setting* s = FindByKey(key)) {
      HEARSAY_RETURN_IF_ERROR(ApplyTomlValue(c, *s, node, where));
      continue;
    }
    if (const auto* entries = node.as_array(); entries != nullptr && key == "engine") {
      HEARSAY_RETURN_IF_ERROR(ApplyEngineEntries(c, *entries, source));
      continue;
    }
    if (const auto* sub = node.as_table(); sub != nullptr && prefix.empty()) {
      bool known_section = false;
      for (const Setting& s : Table()) {
        if (s.info.key.substr(0, s.info.key.find('.')) == key) known_section = true;
      }
      if (known_section) {
        HEARSAY_RETURN_IF_ERROR(ApplyTable(c, *sub, key, source));
        continue;
      }
    }
    return InvalidArgumentError(where + ": unknown key (see docs/operations.md)");
  }
  return OkStatus();
}

Status CheckAddress(std::string_view what, const std::string& value, bool allow_port_zero) {
  Result<HostPort> hp = ParseHostPort(value);
  if (!hp.ok()) return InvalidArgumentError(std::string(what) + ": " + hp.status().message());
  if (!allow_port_zero && hp->port == 0) {
    return InvalidArgumentError(std::string(what) + ": port 0 is not a reachable address");
  }
  return OkStatus();
}

}  // namespace

std::span<const SettingInfo> Settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> v;
    for (const Setting& s : Table()) v.push_back(s.info);
    return v;
  }();
  return infos;
}

std::string SettingValue(const DaemonConfig& c, std::string_view key) {
  const Setting* s = FindByKey(key);
  if (s == nullptr) return {};
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = c.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          std::string out;
          for (const std::string& item : v) out += (out.empty() ? "" : ",") + item;
          return out;
        }
      },
      s->member);
}

Status DaemonConfig::ApplyToml(std::string_view text, std::string_view source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
        << e.description();
    return InvalidArgumentError(msg.str());
  }
  DaemonConfig copy = *this;
  HEARSAY_RETURN_IF_ERROR(ApplyTable(copy, table, "", source));
  *this = std::move(copy);
  return OkStatus();
}

Status DaemonConfig::LoadTomlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read config file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ApplyToml(text.str(), path);
}

Status DaemonConfig::ApplyFlag(std::string_view flag, std::string_view value) {
  const Setting* s = FindByFlag(flag);
  std::string where = "--";
  where.append(flag);
  if (s == nullptr) return InvalidArgumentError(where + ": unknown flag");
  switch (s->info.kind) {
    case SettingKind::kString:
      this->*std::get<std::string DaemonConfig::*>(s->member) = std::string(value);
      return OkStatus();
    case SettingKind::kUInt: {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
        return InvalidArgumentError(where + ": expected a non-negative integer, got " +
                                    Quote(value));
      }
      HEARSAY_RETURN_IF_ERROR(CheckRange(*s, v, where));
      this->*std::get<uint64_t DaemonConfig::*>(s->member) = v;
      return OkStatus();
    }
    case SettingKind::kBool:
      if (value == "true" || value == "1" || value.empty()) {
        this->*std::get<bool DaemonConfig::*>(s->member) = true;
      } else if (value == "false" || value == "0") {
        this->*std::get<bool DaemonConfig::*>(s->member) = false;
      } else {
        return InvalidArgumentError(where + ": expected true or false, got " + Quote(value));
      }
      return OkStatus();
    case SettingKind::kList:
      this->*std::get<std::vector<std::string> DaemonConfig::*>(s->member) = SplitList(value);
      return OkStatus();
  }
  return InternalError("unreachable");
}

Status DaemonConfig::Validate() const {
  if (state_signatures != "ed25519" && state_signatures != "off") {
    return InvalidArgumentError("security.state_signatures: want ed25519 or off");
  }
  if (gossip_inbound_frame_bytes != 0 &&
      gossip_inbound_frame_bytes < gossip::kMaxMessageBytes + 1024) {
    return InvalidArgumentError("gossip.inbound_frame_pool_bytes must hold one largest frame (" +
                                std::to_string(gossip::kMaxMessageBytes + 1024) +
                                " bytes), or be 0");
  }
  if (!api_keys_file.empty() && insecure) {
    return InvalidArgumentError(
        "api.keys_file needs a cluster key: on an insecure node any client could send a "
        "forwarded request, as any tenant, past the API keys");
  }
  if (tls_cert.empty() != tls_key.empty()) {
    return InvalidArgumentError("tls.cert and tls.key go together: give both, or neither");
  }
  if (!tls_ca.empty() && tls_cert.empty()) {
    return InvalidArgumentError("tls.ca needs tls.cert and tls.key: the node's own certificate");
  }
  if (max_connections_per_client > max_connections) {
    return InvalidArgumentError(
        "limits.max_connections_per_client must not exceed "
        "limits.max_connections");
  }
  HEARSAY_RETURN_IF_ERROR(CheckAddress("http.listen", http_listen, true));
  HEARSAY_RETURN_IF_ERROR(CheckAddress("gossip.listen", gossip_listen, true));
  if (!admin_listen.empty()) {
    HEARSAY_RETURN_IF_ERROR(CheckAddress("http.admin_listen", admin_listen, true));
  }
  if (!http_advertise.empty()) {
    HEARSAY_RETURN_IF_ERROR(CheckAddress("http.advertise", http_advertise, false));
  }
  if (!gossip_advertise.empty()) {
    HEARSAY_RETURN_IF_ERROR(CheckAddress("gossip.advertise", gossip_advertise, false));
  }
  for (const std::string& seed : join) {
    HEARSAY_RETURN_IF_ERROR(CheckAddress("gossip.join", seed, false));
  }
  if (cluster_name.empty() || cluster_name.size() > 255) {
    return InvalidArgumentError("gossip.cluster_name: must be 1..255 bytes");
  }
  if (node_id.size() > 128) return InvalidArgumentError("node.id: at most 128 bytes");
  bool policy_found = false;
  for (const route::PolicyInfo& p : route::Policies()) {
    if (p.name != policy) continue;
    policy_found = true;
    if (p.simulator_only) {
      return InvalidArgumentError("node.policy: '" + policy + "' " +
                                  (p.central ? "is a central router's policy (a simulator baseline)"
                                             : "needs exact global knowledge") +
                                  " and runs only in the simulator");
    }
  }
  if (!policy_found) {
    return InvalidArgumentError("node.policy: unknown policy '" + policy +
                                "'; valid: " + route::PolicyNames());
  }
  if (!api::IsValidModelName(model)) {
    return InvalidArgumentError("node.model: '" + api::Truncated(model, 64) +
                                "' is not 1 to 256 bytes of printable ASCII without spaces");
  }
  if (model_aliases.size() > 16) return InvalidArgumentError("node.model_aliases: at most 16");
  for (const std::string& a : model_aliases) {
    if (!api::IsValidModelName(a)) {
      return InvalidArgumentError("node.model_aliases: '" + api::Truncated(a, 64) +
                                  "' is not 1 to 256 bytes of printable ASCII without spaces");
    }
  }
  if (!host_group.empty() && !gossip::IsServiceName(host_group, gossip::kMaxHostGroupBytes)) {
    return InvalidArgumentError("node.host_group: '" + api::Truncated(host_group, 64) +
                                "' is not 1 to 64 bytes of printable ASCII");
  }
  if (engine != "sim" && engine != "openai") {
    return InvalidArgumentError("engine.kind: unknown engine '" + engine + "'; valid: sim, openai");
  }
  // With [[engine]] entries each entry names its own upstream (engine_entries.h).
  if (engine == "openai" && (engines.empty() || !upstream.empty())) {
    if (upstream.empty()) {
      return InvalidArgumentError(
          "engine.upstream: engine openai needs the engine's URL "
          "(--upstream http://host:port)");
    }
    if (Result<upstream::UpstreamUrl> u = upstream::ParseUpstreamUrl(upstream); !u.ok()) {
      return InvalidArgumentError("engine.upstream: " + u.status().message());
    }
  }
  if (!kv_events.empty() || !kv_events_replay.empty()) {
    if (engine != "openai" || kv_events.empty()) {
      return InvalidArgumentError(
          "engine.kv_events: KV events need engine openai and the publisher's endpoint "
          "(--kv-events tcp://host:5557)");
    }
    upstream::KvEventsSubscriberOptions ko;
    ko.endpoint = kv_events;
    ko.replay_endpoint = kv_events_replay;
    if (Status s = upstream::ValidateKvEventsSubscriberOptions(ko); !s.ok()) {
      return InvalidArgumentError("engine.kv_events: " + s.message());
    }
  }
  if (Result<upstream::UpstreamFlavor> f = upstream::ParseUpstreamFlavor(upstream_flavor);
      !f.ok()) {
    return InvalidArgumentError("engine.upstream_flavor: " + f.status().message());
  }
  HEARSAY_RETURN_IF_ERROR(ValidateKeying(*this));
  HEARSAY_RETURN_IF_ERROR(ValidateEngineEntries(*this));
  if (Result<engine::CostModel> cm = engine::CostModel::FromPreset(engine_preset); !cm.ok()) {
    return InvalidArgumentError("engine.preset: " + cm.status().message());
  }
  if (capacity_tokens < context_tokens) {
    return InvalidArgumentError("engine.capacity_tokens (" + std::to_string(capacity_tokens) +
                                ") must hold one full context (limits.context_tokens = " +
                                std::to_string(context_tokens) + ")");
  }
  if (max_tokens >= context_tokens) {
    return InvalidArgumentError("limits.max_tokens must be below limits.context_tokens");
  }
  static constexpr std::string_view kLevels[] = {"trace", "debug",    "info", "warn",
                                                 "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), log_level) == std::end(kLevels)) {
    return InvalidArgumentError("runtime.log_level: unknown level '" + log_level +
                                "'; valid: trace, debug, info, warn, error, critical, off");
  }
  if (cluster_key_file.empty() && keyring_file.empty() && !insecure) {
    return FailedPreconditionError(
        "no cluster key: give --cluster-key-file (create one with `hearsay keygen`), or "
        "--insecure to run without authentication and encryption");
  }
  if ((!cluster_key_file.empty() || !keyring_file.empty()) && insecure) {
    return InvalidArgumentError(
        "security: give either a cluster key file (or keyring file) or insecure, not both");
  }
  return OkStatus();
}

std::string DaemonConfig::Describe(bool all) const {
  static const DaemonConfig defaults;
  std::string out;
  for (const Setting& s : Table()) {
    std::string value = SettingValue(*this, s.info.key);
    if (!all && value == SettingValue(defaults, s.info.key)) continue;
    if (!out.empty()) out += ' ';
    out += std::string(s.info.key) + "=" + value;
  }
  for (size_t i = 0; i < engines.size(); ++i) {
    for (const auto& [flag, value] : engines[i].settings) {
      if (!out.empty()) out += ' ';
      out.append("engine[").append(std::to_string(i)).append("].");
      out.append(flag).append("=").append(value);
    }
  }
  return out;
}

}  // namespace hearsay::net
