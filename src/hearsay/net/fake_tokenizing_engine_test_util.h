// FakeTokenizingEngine (tests only): an OpenAI-compatible upstream on loopback with its own
// tokenizer, llama.cpp-shaped. POST /tokenize and /apply-template answer like llama-server;
// completions stream one chunk with timings.cache_n computed from an unbounded prefix cache over
// the engine's own tokens (or always 0 when it lies), then usage and [DONE].
//
// Its tokenizer cuts text into 3-byte pieces (not words), so its token counts differ from the
// node's bytes tokenizer: keys only match the engine's with node.tokenizer = engine.
//
// Thread-safety: the server runs on its own I/O thread; the atomics and counters may be read from
// any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/http/server.h"
#include "hearsay/http/test_util.h"

namespace hearsay::net::testing {

class FakeTokenizingEngine {
 public:
  enum class TokenizeMode { kOk, kError, kGarbage, kSlow };

  FakeTokenizingEngine() {
    http::ServerOptions o;
    o.listen = "127.0.0.1:0";
    auto s = http::Server::Start(io_.io(), o,
                                 [this](http::Request req, std::shared_ptr<http::Responder> res) {
                                   Handle(std::move(req), std::move(res));
                                 });
    server_ = std::move(s).value();
  }
  ~FakeTokenizingEngine() {
    server_->Close();
    io_.Stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  // The engine's tokens for `text`: BOS (1) when add_special, then one id per 3-byte piece.
  static std::vector<uint32_t> Tokenize(const std::string& text, bool add_special) {
    std::vector<uint32_t> out;
    if (add_special) out.push_back(1);
    for (size_t i = 0; i < text.size(); i += 3) {
      out.push_back(2 + static_cast<uint32_t>(std::hash<std::string>{}(text.substr(i, 3)) % 31000));
    }
    return out;
  }
  // The engine's chat template (llama-2-like, unlike the node's ChatML).
  static std::string Template(const nlohmann::json& messages) {
    std::string out;
    for (const auto& m : messages) {
      // Appended piece by piece: GCC 12's -Wrestrict misfires on "literal" + std::string.
      out.append("[").append(m.value("role", std::string())).append("] ");
      out.append(m.value("content", std::string())).append("\n");
    }
    return out.append("[assistant] ");
  }

  std::atomic<TokenizeMode> tokenize_mode{TokenizeMode::kOk};
  std::atomic<bool> lie_about_cache{false};  // report 0 cached tokens whatever was cached
  std::atomic<int> tokenize_calls{0};
  std::atomic<int> template_calls{0};
  std::atomic<int> completions{0};
  // The last /tokenize request body.
  std::string last_tokenize_body() {
    std::lock_guard lock(mu_);
    return last_tokenize_body_;
  }

 private:
  void Handle(http::Request req, std::shared_ptr<http::Responder> res) {
    const http::Headers json_headers = {{"content-type", "application/json"}};
    if (req.path == "/health") return res->Respond(200, json_headers, R"({"status":"ok"})");
    if (req.path == "/slots") return res->Respond(200, json_headers, "[]");
    if (req.path == "/v1/models") {
      return res->Respond(200, json_headers, R"({"object":"list","data":[{"id":"fake"}]})");
    }
    if (req.path == "/metrics") {
      return res->Respond(200, {{"content-type", "text/plain; version=0.0.4"}},
                          "llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n");
    }
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    if (req.path == "/apply-template") {
      ++template_calls;
      return res->Respond(200, json_headers,
                          nlohmann::json{{"prompt", Template(body["messages"])}}.dump());
    }
    if (req.path == "/tokenize") {
      ++tokenize_calls;
      {
        std::lock_guard lock(mu_);
        last_tokenize_body_ = req.body;
      }
      switch (tokenize_mode.load()) {
        case TokenizeMode::kOk:
          return res->Respond(
              200, json_headers,
              nlohmann::json{{"tokens", Tokenize(body.value("content", std::string()),
                                                 body.value("add_special", false))}}
                  .dump());
        case TokenizeMode::kError:
          return res->Respond(500, json_headers, R"({"error":{"message":"tokenizer broke"}})");
        case TokenizeMode::kGarbage:
          return res->Respond(200, json_headers, R"({"tokens":[1,"two",-3]})");
        case TokenizeMode::kSlow: {
          std::lock_guard lock(mu_);
          parked_.push_back(res);  // never answered
          return;
        }
      }
    }
    // A completion: the engine computes the prompt as a completion would (BOS added).
    ++completions;
    const std::string text = req.path == "/v1/chat/completions"
                                 ? Template(body["messages"])
                                 : body.value("prompt", std::string());
    const std::vector<uint32_t> tokens = Tokenize(text, true);
    size_t cached = 0;
    {
      std::lock_guard lock(mu_);
      for (const auto& seen : cache_) {
        const auto [a, b] = std::mismatch(tokens.begin(), tokens.end(), seen.begin(), seen.end());
        cached = std::max(cached, static_cast<size_t>(a - tokens.begin()));
      }
      cache_.push_back(tokens);
    }
    cached = std::min(cached, tokens.size() - 1);  // the last token is always recomputed
    if (lie_about_cache) cached = 0;
    const bool chat = req.path == "/v1/chat/completions";
    nlohmann::json choice = chat ? nlohmann::json{{"index", 0}, {"delta", {{"content", "ok"}}}}
                                 : nlohmann::json{{"index", 0}, {"text", "ok"}};
    nlohmann::json first = {
        {"choices", {choice}},
        {"timings",
         {{"cache_n", cached}, {"prompt_n", tokens.size() - cached}, {"prompt_ms", 1.0}}}};
    nlohmann::json usage = {{"choices", nlohmann::json::array()},
                            {"usage",
                             {{"prompt_tokens", tokens.size()},
                              {"completion_tokens", 1},
                              {"prompt_tokens_details", {{"cached_tokens", cached}}}}}};
    res->StartStream(200, {{"content-type", "text/event-stream"}});
    res->Write("data: " + first.dump() + "\n\ndata: " + usage.dump() + "\n\ndata: [DONE]\n\n");
    res->End();
  }

  http::testing::IoThread io_;
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::vector<std::vector<uint32_t>> cache_;              // guarded by mu_
  std::string last_tokenize_body_;                        // guarded by mu_
  std::vector<std::shared_ptr<http::Responder>> parked_;  // guarded by mu_
};

}  // namespace hearsay::net::testing
