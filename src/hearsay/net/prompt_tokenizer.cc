// PromptTokenizer: see prompt_tokenizer.h.
#include "hearsay/net/prompt_tokenizer.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>

#include "hearsay/upstream/tokenize_codec.h"
#include "hearsay/upstream/upstream_url.h"

namespace hearsay::net {
namespace {

namespace asio = boost::asio;
using upstream::UpstreamFlavor;

// A /tokenize answer of a full context is a few hundred KiB at most; past this it is garbage.
constexpr size_t kMaxAnswerBytes = 16 << 20;

bool CanRenderChat(UpstreamFlavor f) {
  return upstream::TokenizeTakesMessages(f) || upstream::HasApplyTemplate(f);
}

// Logs the 1st, 2nd, 4th, 8th, ... fallback: loud at first, never a flood.
void LogFallback(uint64_t count, std::string_view reason) {
  if ((count & (count - 1)) != 0) return;
  spdlog::warn(
      "event=tokenize_fallback count={} msg=\"engine tokenizer failed ({}); this request is "
      "keyed with the bytes tokenizer, so its cache estimate will be off\"",
      count, reason);
}

// One engine tokenization: up to two HTTP calls under one deadline.
struct Exchange : std::enable_shared_from_this<Exchange> {
  enum class Step { kTemplate, kTokens };

  Exchange(asio::io_context& io, http::Client& client, KeyingConfig keying, std::string host_port,
           std::string base_path, std::shared_ptr<PromptTokenizerStats> stats, std::string prompt,
           PromptTokenizer::Done done)
      : timer(io),
        client(client),
        keying(std::move(keying)),
        host_port(std::move(host_port)),
        base_path(std::move(base_path)),
        stats(std::move(stats)),
        prompt(std::move(prompt)),
        done(std::move(done)) {}

  void Start(upstream::TokenizeCall call, Step step) {
    timer.expires_after(keying.timeout);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      self->Fallback(&PromptTokenizerStats::fallback_timeout,
                     "no answer within " + std::to_string(ToMillis(self->keying.timeout)) + " ms",
                     /*cancel=*/true);
    });
    Send(std::move(call), step);
  }

  void Send(upstream::TokenizeCall call, Step step) {
    http::ClientRequest req;
    req.method = "POST";
    req.host_port = host_port;
    req.target = base_path + call.target;
    req.headers.push_back({"content-type", "application/json"});
    req.body = std::move(call.body);
    req.connect_timeout = keying.timeout;
    req.response_timeout = keying.timeout;
    req.idle_timeout = keying.timeout;
    auto self = shared_from_this();
    auto status = std::make_shared<int>(0);
    auto body = std::make_shared<std::string>();
    http::ResponseHandlers h;
    h.on_headers = [status](int s, const http::Headers&) { *status = s; };
    h.on_body = [body](std::string_view chunk) {
      if (body->size() + chunk.size() <= kMaxAnswerBytes) body->append(chunk);
    };
    h.on_done = [self, status, body, step](Status s) {
      self->OnAnswer(std::move(s), *status, *body, step);
    };
    std::shared_ptr<http::RequestHandle> handle = client.Send(std::move(req), std::move(h));
    std::lock_guard<std::mutex> lock(mu);
    this->handle = std::move(handle);
    if (finished) this->handle->Cancel();
  }

  void OnAnswer(Status s, int status, const std::string& body, Step step) {
    if (!s.ok()) {
      return Fallback(s.code() == StatusCode::kDeadlineExceeded
                          ? &PromptTokenizerStats::fallback_timeout
                          : &PromptTokenizerStats::fallback_error,
                      s.message(), false);
    }
    if (status != 200) {
      return Fallback(&PromptTokenizerStats::fallback_error,
                      "HTTP " + std::to_string(status) + " from the upstream's tokenizer", false);
    }
    if (step == Step::kTemplate) {
      Result<std::string> rendered = upstream::ParseApplyTemplateResponse(body, kMaxAnswerBytes);
      if (!rendered.ok()) {
        return Fallback(&PromptTokenizerStats::fallback_invalid, rendered.status().message(),
                        false);
      }
      Result<upstream::TokenizeCall> next =
          upstream::TokenizePromptCall(keying.flavor, keying.model, rendered.value());
      if (!next.ok()) {
        return Fallback(&PromptTokenizerStats::fallback_invalid, next.status().message(), false);
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (finished) return;
      }
      return Send(std::move(next).value(), Step::kTokens);
    }
    Result<std::vector<uint32_t>> tokens = upstream::ParseTokenizeResponse(body, keying.max_tokens);
    if (!tokens.ok() || tokens.value().empty()) {
      return Fallback(&PromptTokenizerStats::fallback_invalid,
                      tokens.ok() ? "no tokens" : tokens.status().message(), false);
    }
    PromptTokens out;
    out.tokens = std::move(tokens).value();
    out.source = TokenSource::kEngine;
    if (Finish()) {
      stats->engine.fetch_add(1, std::memory_order_relaxed);
      Complete(std::move(out));
    }
  }

  // Hands the result over and lets go of what the caller captured (the timer may hold this
  // exchange until it expires).
  void Complete(PromptTokens out) {
    PromptTokenizer::Done d = std::move(done);
    done = nullptr;
    prompt.clear();
    prompt.shrink_to_fit();
    d(std::move(out));
  }

  // True for the one caller that ends the exchange.
  bool Finish() {
    std::lock_guard<std::mutex> lock(mu);
    if (finished) return false;
    finished = true;
    return true;
  }

  void Fallback(std::atomic<uint64_t> PromptTokenizerStats::*counter, std::string reason,
                bool cancel) {
    std::shared_ptr<http::RequestHandle> h;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (finished) return;
      finished = true;
      if (cancel) h = handle;
    }
    if (h) h->Cancel();
    (stats.get()->*counter).fetch_add(1, std::memory_order_relaxed);
    const uint64_t n = stats->fallback_error.load() + stats->fallback_timeout.load() +
                       stats->fallback_invalid.load();
    LogFallback(n, reason);
    PromptTokens out;
    out.tokens = api::Tokenizer().Encode(prompt);
    out.source = TokenSource::kFallback;
    out.fallback_reason = std::move(reason);
    Complete(std::move(out));
  }

  asio::steady_timer timer;
  http::Client& client;
  KeyingConfig keying;
  std::string host_port;
  std::string base_path;
  std::shared_ptr<PromptTokenizerStats> stats;
  std::string prompt;
  PromptTokenizer::Done done;
  std::mutex mu;
  bool finished = false;                        // guarded by mu
  std::shared_ptr<http::RequestHandle> handle;  // guarded by mu
};

}  // namespace

Result<KeyingConfig> ResolveKeying(const DaemonConfig& c) {
  KeyingConfig k;
  if (c.tokenizer == "engine") {
    k.tokenizer = TokenizerMode::kEngine;
  } else if (c.tokenizer != "bytes") {
    return InvalidArgumentError("node.tokenizer: unknown tokenizer '" + c.tokenizer +
                                "'; valid: bytes, engine");
  }
  Result<UpstreamFlavor> flavor = upstream::ParseUpstreamFlavor(c.upstream_flavor);
  if (!flavor.ok())
    return InvalidArgumentError("engine.upstream_flavor: " + flavor.status().message());
  k.flavor = flavor.value();
  if (k.tokenizer == TokenizerMode::kEngine) {
    if (c.engine != "openai") {
      return InvalidArgumentError(
          "node.tokenizer: engine needs an upstream engine (engine.kind openai); the simulated "
          "engine has no tokenizer of its own");
    }
    if (k.flavor == UpstreamFlavor::kGeneric) {
      return InvalidArgumentError(
          "node.tokenizer: engine needs a known /tokenize endpoint; set engine.upstream_flavor to "
          "llamacpp, vllm or sglang");
    }
  }
  if (c.chat_template == "engine") {
    if (k.tokenizer != TokenizerMode::kEngine || !CanRenderChat(k.flavor)) {
      return InvalidArgumentError(
          "node.chat_template: engine needs node.tokenizer engine and an upstream that renders "
          "chat itself (llamacpp, vllm)");
    }
    k.chat_template = ChatTemplateMode::kEngine;
  } else if (c.chat_template == "auto") {
    k.chat_template = k.tokenizer == TokenizerMode::kEngine && CanRenderChat(k.flavor)
                          ? ChatTemplateMode::kEngine
                          : ChatTemplateMode::kBuiltin;
  } else if (c.chat_template != "builtin") {
    return InvalidArgumentError("node.chat_template: unknown template '" + c.chat_template +
                                "'; valid: builtin, engine, auto");
  }
  k.upstream_url = c.upstream;
  k.model = c.upstream_model.empty() ? c.model : c.upstream_model;
  k.timeout = std::chrono::milliseconds(c.tokenize_timeout_ms);
  k.max_tokens = 4 * c.context_tokens + 16;
  return k;
}

std::string KeyingDescription(const DaemonConfig& c) {
  Result<KeyingConfig> k = ResolveKeying(c);
  const bool engine_chat = k.ok() && k.value().chat_template == ChatTemplateMode::kEngine;
  return "tokenizer=" + c.tokenizer + " chat_template=" + (engine_chat ? "engine" : "builtin") +
         " block_size=" + std::to_string(c.block_size) +
         (c.key_namespace.empty() ? "" : " key_namespace=" + c.key_namespace);
}

std::string KeyNamespace(const DaemonConfig& c) {
  // Bytes keying keeps the plain namespace, so existing clusters keep their keys.
  if (c.tokenizer == "bytes") return c.key_namespace;
  return c.key_namespace + "\x1f" + KeyingDescription(c);
}

Result<std::unique_ptr<PromptTokenizer>> PromptTokenizer::Create(asio::io_context* io,
                                                                 KeyingConfig keying) {
  if (keying.tokenizer == TokenizerMode::kEngine && io == nullptr) {
    return InvalidArgumentError("PromptTokenizer: engine mode needs an io_context");
  }
  std::unique_ptr<PromptTokenizer> t(new PromptTokenizer(io, std::move(keying)));
  if (t->engine_mode()) {
    Result<upstream::UpstreamUrl> url = upstream::ParseUpstreamUrl(t->keying_.upstream_url);
    if (!url.ok()) return InvalidArgumentError("engine.upstream: " + url.status().message());
    t->host_port_ = url.value().host_port;
    t->base_path_ = url.value().base_path;
    http::ClientOptions co;
    // Expire idle connections before llama.cpp's 5 s keep-alive close (as the engine's client).
    co.idle_expiry = std::chrono::seconds(2);
    t->client_ = std::make_unique<http::Client>(*io, co);
  }
  return t;
}

PromptTokenizer::PromptTokenizer(asio::io_context* io, KeyingConfig keying)
    : io_(io), keying_(std::move(keying)), stats_(std::make_shared<PromptTokenizerStats>()) {}

PromptTokenizer::~PromptTokenizer() = default;

void PromptTokenizer::Tokenize(api::Endpoint endpoint, std::string_view prompt,
                               std::string_view body, Done done) {
  if (!engine_mode()) {
    PromptTokens out;
    out.tokens = bytes_.Encode(prompt);
    done(std::move(out));
    return;
  }
  auto x = std::make_shared<Exchange>(*io_, *client_, keying_, host_port_, base_path_, stats_,
                                      std::string(prompt), std::move(done));
  const bool engine_chat = endpoint == api::Endpoint::kChatCompletions &&
                           keying_.chat_template == ChatTemplateMode::kEngine;
  Result<upstream::TokenizeCall> call = [&]() -> Result<upstream::TokenizeCall> {
    if (!engine_chat) return upstream::TokenizePromptCall(keying_.flavor, keying_.model, prompt);
    HEARSAY_ASSIGN_OR_RETURN(std::string messages, upstream::MessagesJson(body));
    return upstream::TokenizeMessagesCall(keying_.flavor, keying_.model, messages);
  }();
  const Exchange::Step step = call.ok() && call.value().target == "/apply-template"
                                  ? Exchange::Step::kTemplate
                                  : Exchange::Step::kTokens;
  if (!call.ok()) {
    return x->Fallback(&PromptTokenizerStats::fallback_invalid, call.status().message(), false);
  }
  x->Start(std::move(call).value(), step);
}

}  // namespace hearsay::net
