// PromptTokenizer: turns a client's prompt into the token ids the node keys its prefix cache with,
// before routing. Keying must follow the engine's own tokens for the estimates to be exact.
//
// Modes (DaemonConfig node.tokenizer / node.chat_template, see docs/engines.md):
//   - bytes: the built-in deterministic tokenizer (api::Tokenizer) over the prompt, chat messages
//     rendered by the built-in ChatML template. Synchronous, no I/O.
//   - engine: the upstream's own /tokenize (upstream/tokenize_codec.h), called on the I/O threads
//     through a pooled http::Client. Chat messages are rendered by the engine's template where it
//     can (vLLM: /tokenize with messages; llama.cpp: /apply-template, then /tokenize), else by the
//     built-in template. If the upstream fails, answers garbage, or takes longer than the timeout
//     (one deadline for the whole exchange), the request is keyed with bytes instead and the
//     fallback is counted: a client's request never fails because of keying.
// Block keys also depend on the cluster secret, the model, the block size and the key namespace;
// KeyNamespace() mixes the keying mode in, so nodes that disagree about it share no keys (no
// false hits) rather than wrong ones.
//
// Thread-safety: Tokenize and stats may be called from any thread; `done` runs on the calling
// thread (bytes mode, or a fallback decided before any I/O) or on an I/O thread.
// Ownership: the io_context must outlive the PromptTokenizer; destroying it cancels calls in
// flight (their `done` then runs only if the io_context still runs).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/openai_request.h"
#include "hearsay/api/tokenizer.h"
#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/http/client.h"
#include "hearsay/net/daemon_config.h"
#include "hearsay/upstream/openai_engine_options.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace hearsay::net {

enum class TokenizerMode : uint8_t { kBytes, kEngine };
enum class ChatTemplateMode : uint8_t { kBuiltin, kEngine };

// The keying settings of a configuration, resolved and checked.
struct KeyingConfig {
  TokenizerMode tokenizer = TokenizerMode::kBytes;
  ChatTemplateMode chat_template = ChatTemplateMode::kBuiltin;
  upstream::UpstreamFlavor flavor = upstream::UpstreamFlavor::kGeneric;
  std::string upstream_url;
  std::string model;  // sent to /tokenize where the flavor wants one
  Duration timeout = std::chrono::milliseconds(500);
  // More tokens than this in a /tokenize answer is garbage (4x the context window).
  size_t max_tokens = 1 << 20;
};

// INVALID_ARGUMENT naming the setting: an unknown mode, tokenizer engine without engine openai or
// with flavor generic, chat_template engine with a flavor that cannot render messages.
Result<KeyingConfig> ResolveKeying(const DaemonConfig& config);
inline Status ValidateKeying(const DaemonConfig& config) { return ResolveKeying(config).status(); }
// "tokenizer=engine chat_template=engine block_size=16" (logs, the drift warning).
std::string KeyingDescription(const DaemonConfig& config);
// The namespace string given to the BlockKeyer (its tenant): key_namespace plus the keying mode.
std::string KeyNamespace(const DaemonConfig& config);

// Where a request's tokens came from.
enum class TokenSource : uint8_t { kBytes, kEngine, kFallback };

struct PromptTokens {
  std::vector<uint32_t> tokens;
  TokenSource source = TokenSource::kBytes;
  // Why engine tokenization was not used (kFallback only).
  std::string fallback_reason;
};

struct PromptTokenizerStats {
  std::atomic<uint64_t> engine{0};            // keyed with the engine's tokens
  std::atomic<uint64_t> fallback_error{0};    // /tokenize unreachable or answered non-200
  std::atomic<uint64_t> fallback_timeout{0};  // no answer within the timeout
  std::atomic<uint64_t> fallback_invalid{0};  // an answer that did not decode
};

class PromptTokenizer {
 public:
  using Done = std::function<void(PromptTokens)>;

  // The tokenizer for `keying`; engine mode needs `io` (bytes mode ignores it).
  static Result<std::unique_ptr<PromptTokenizer>> Create(boost::asio::io_context* io,
                                                         KeyingConfig keying);
  ~PromptTokenizer();
  PromptTokenizer(const PromptTokenizer&) = delete;
  PromptTokenizer& operator=(const PromptTokenizer&) = delete;

  // Tokenizes the request's `prompt` (for chat: rendered by the built-in template) or, where the
  // engine renders chat itself, the messages of `body`. `done` runs exactly once.
  void Tokenize(api::Endpoint endpoint, std::string_view prompt, std::string_view body, Done done);

  bool engine_mode() const { return keying_.tokenizer == TokenizerMode::kEngine; }
  const KeyingConfig& keying() const { return keying_; }
  const PromptTokenizerStats& stats() const { return *stats_; }

 private:
  PromptTokenizer(boost::asio::io_context* io, KeyingConfig keying);

  boost::asio::io_context* io_;
  KeyingConfig keying_;
  std::string host_port_;
  std::string base_path_;
  api::Tokenizer bytes_;
  std::unique_ptr<http::Client> client_;
  std::shared_ptr<PromptTokenizerStats> stats_;
};

}  // namespace hearsay::net
