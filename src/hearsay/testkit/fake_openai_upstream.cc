// FakeOpenAiUpstream: see fake_openai_upstream.h.
#include "hearsay/testkit/fake_openai_upstream.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "hearsay/common/check.h"
#include "hearsay/http/server.h"

namespace hearsay::testkit {
namespace {

using nlohmann::json;

const http::Headers kJson = {{"content-type", "application/json"}};

std::string ErrorBody(const std::string& message) {
  return json{{"error", {{"message", message}, {"type", "server_error"}}}}.dump();
}

uint32_t Words(const std::string& text) {
  std::istringstream in(text);
  uint32_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

// The words of a completion's prompt or of a chat request's message contents.
uint32_t PromptWords(const json& body, bool chat) {
  if (!chat)
    return body.contains("prompt") && body["prompt"].is_string()
               ? Words(body["prompt"].get<std::string>())
               : 0;
  uint32_t n = 0;
  if (body.contains("messages") && body["messages"].is_array()) {
    for (const json& m : body["messages"]) {
      if (m.is_object() && m.contains("content") && m["content"].is_string()) {
        n += Words(m["content"].get<std::string>());
      }
    }
  }
  return n;
}

std::string Event(const json& data) { return "data: " + data.dump() + "\n\n"; }

}  // namespace

struct FakeOpenAiUpstream::Impl {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);
  std::unique_ptr<http::Server> server;
  std::thread thread;
  uint16_t port = 0;

  std::mutex mu;  // guards the fields below
  int error_status = 500;
  std::string error_message = "the fake engine failed";
  std::string text = " tok";
  std::vector<std::shared_ptr<http::Responder>> held;
};

FakeOpenAiUpstream::FakeOpenAiUpstream() : impl_(std::make_unique<Impl>()) {
  http::ServerOptions o;
  o.listen = "127.0.0.1:0";
  Result<std::unique_ptr<http::Server>> s = http::Server::Start(
      impl_->io, o, [this](http::Request req, std::shared_ptr<http::Responder> r) {
        Handle(std::move(req), std::move(r));
      });
  HEARSAY_CHECK(s.ok());
  impl_->server = std::move(s).value();
  impl_->port = impl_->server->port();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

FakeOpenAiUpstream::~FakeOpenAiUpstream() {
  Close();
  {
    std::lock_guard lock(impl_->mu);
    impl_->held.clear();
  }
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

uint16_t FakeOpenAiUpstream::port() const { return impl_->port; }
std::string FakeOpenAiUpstream::address() const { return "127.0.0.1:" + std::to_string(port()); }
std::string FakeOpenAiUpstream::url() const { return "http://" + address(); }

void FakeOpenAiUpstream::Close() { impl_->server->Close(); }

void FakeOpenAiUpstream::set_server_error(int status, std::string message) {
  std::lock_guard lock(impl_->mu);
  impl_->error_status = status;
  impl_->error_message = std::move(message);
}

void FakeOpenAiUpstream::set_text(std::string text) {
  std::lock_guard lock(impl_->mu);
  impl_->text = std::move(text);
}

std::string FakeOpenAiUpstream::text() const {
  std::lock_guard lock(impl_->mu);
  return impl_->text;
}

void FakeOpenAiUpstream::Handle(http::Request req, std::shared_ptr<http::Responder> res) {
  ++requests_;
  const Mode mode = mode_.load();
  if (mode == Mode::kDown) {
    return res->Respond(503, kJson, ErrorBody("Loading model"));
  }
  if (req.path == "/health") {
    const int status = health_status_.load();
    return res->Respond(status, kJson,
                        status == 200 ? R"({"status":"ok"})" : ErrorBody("Loading model"));
  }
  if (req.path == "/slots") return res->Respond(200, kJson, "[]");
  if (req.path == "/metrics") {
    return res->Respond(200, {{"content-type", "text/plain; version=0.0.4"}},
                        "llamacpp:requests_processing " + std::to_string(other_running_.load()) +
                            "\nllamacpp:requests_deferred " +
                            std::to_string(other_waiting_.load()) + "\n");
  }
  if (req.path != "/v1/completions" && req.path != "/v1/chat/completions") {
    return res->Respond(404, kJson, ErrorBody("no such endpoint: " + req.path));
  }
  ++completions_;
  switch (mode) {
    case Mode::kOk:
      return Answer(req, *res);
    case Mode::kServerError: {
      std::lock_guard lock(impl_->mu);
      return res->Respond(impl_->error_status, kJson, ErrorBody(impl_->error_message));
    }
    case Mode::kGarbage:
      res->StartStream(200, {{"content-type", "text/event-stream"}});
      res->Write("data: {{{ <<<definitely not json>>>\n\n");
      return res->End();
    case Mode::kTooBusy:
      return res->Respond(429, {{"content-type", "application/json"}, {"retry-after", "1"}},
                          R"({"error":{"message":"busy","type":"rate_limit_exceeded"}})");
    case Mode::kSilent: {
      std::lock_guard lock(impl_->mu);
      impl_->held.push_back(std::move(res));  // never answered
      return;
    }
    case Mode::kDown:
      return;
  }
}

void FakeOpenAiUpstream::Answer(const http::Request& req, http::Responder& res) {
  const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return res.Respond(400, kJson, ErrorBody("the body is not a JSON object"));
  const bool chat = req.path == "/v1/chat/completions";
  const uint32_t prompt_tokens = PromptWords(body, chat);
  const uint32_t cached = prompt_tokens / 2;
  const uint32_t max_tokens = body.contains("max_tokens") && body["max_tokens"].is_number_unsigned()
                                  ? std::max<uint32_t>(1, body["max_tokens"].get<uint32_t>())
                                  : 1;
  const std::string model = body.value("model", std::string("fake-model"));
  const std::string text = this->text();
  const json head = {{"id", "cmpl-fake"},
                     {"object", chat ? "chat.completion.chunk" : "text_completion"},
                     {"model", model}};
  auto chunk = [&](const std::string& piece, const json& finish) {
    json c = head;
    c["choices"] = json::array(
        {chat ? json{{"index", 0}, {"delta", {{"content", piece}}}, {"finish_reason", finish}}
              : json{{"index", 0}, {"text", piece}, {"finish_reason", finish}}});
    return c;
  };
  const json usage_block = {{"prompt_tokens", prompt_tokens},
                            {"completion_tokens", max_tokens},
                            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  if (!body.value("stream", false)) {
    // One answer, as servers give a client that does not stream (llama.cpp adds its timings).
    std::string all;
    for (uint32_t i = 0; i < max_tokens; ++i) all += text;
    json a = head;
    a["object"] = chat ? "chat.completion" : "text_completion";
    a["choices"] =
        json::array({chat ? json{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", all}}},
                                 {"finish_reason", "length"}}
                          : json{{"index", 0}, {"text", all}, {"finish_reason", "length"}}});
    a["usage"] = usage_block;
    a["timings"] = {{"cache_n", cached}, {"prompt_n", prompt_tokens - cached}, {"prompt_ms", 1.0}};
    return res.Respond(200, kJson, a.dump());
  }
  res.StartStream(200, {{"content-type", "text/event-stream"}});
  for (uint32_t i = 0; i < max_tokens; ++i) {
    json c = chunk(text, nullptr);
    if (i == 0) {
      c["timings"] = {
          {"cache_n", cached}, {"prompt_n", prompt_tokens - cached}, {"prompt_ms", 1.0}};
    }
    res.Write(Event(c));
  }
  json usage = head;
  usage["choices"] = json::array();
  usage["usage"] = usage_block;
  res.Write(Event(chunk("", "length")) + Event(usage) + "data: [DONE]\n\n");
  res.End();
}

}  // namespace hearsay::testkit
