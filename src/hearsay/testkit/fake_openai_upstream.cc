// FakeOpenAiUpstream: see fake_openai_upstream.h.
#include "hearsay/testkit/fake_openai_upstream.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
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

std::string RenderModels(const FakeOpenAiUpstream::Models& m) {
  using F = FakeOpenAiUpstream::ModelsFormat;
  json data = json::array();
  json ollama = json::array();
  for (const std::string& name : m.models) {
    json e = {{"id", name}, {"object", "model"}, {"created", 1764672000}};
    switch (m.format) {
      case F::kLlamaCpp:
        e["owned_by"] = "llamacpp";
        e["meta"] = {{"vocab_type", 2}, {"n_vocab", 32000}, {"n_ctx_train", m.context_length}};
        ollama.push_back({{"name", name}, {"model", name}, {"type", "model"}});
        break;
      case F::kVllm:
        e["owned_by"] = "vllm";
        e["root"] = name;
        e["parent"] = nullptr;
        e["max_model_len"] = m.context_length;
        e["permission"] = json::array();
        break;
      case F::kSglang:
        e["owned_by"] = "sglang";
        e["root"] = name;
        e["max_model_len"] = m.context_length;
        break;
    }
    data.push_back(std::move(e));
  }
  // llama-server lists its LoRA adapters elsewhere (/lora-adapters), not here.
  if (m.format != F::kLlamaCpp && !m.models.empty()) {
    for (const std::string& a : m.adapters) {
      data.push_back({{"id", a},
                      {"object", "model"},
                      {"created", 1764672000},
                      {"owned_by", m.format == F::kVllm ? "vllm" : "sglang"},
                      {"root", "/adapters/" + a},
                      {"parent", m.models.front()},
                      {"max_model_len", nullptr}});
    }
  }
  json page = {{"object", "list"}, {"data", std::move(data)}};
  if (m.format == F::kLlamaCpp) page["models"] = std::move(ollama);
  return page.dump();
}

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
  Models models;
  Delays delays;
  std::map<std::string, int> models_asked;
  // Answers in progress under set_delays(), each with its timer; erased when done.
  struct Delayed {
    explicit Delayed(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
    std::shared_ptr<http::Responder> responder;
    std::vector<Step> steps;
    size_t next = 0;
  };
  std::vector<std::shared_ptr<Delayed>> delayed;
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
  impl_->delayed.clear();  // the I/O thread is gone: no race with its handlers
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

void FakeOpenAiUpstream::set_models(Models models) {
  std::lock_guard lock(impl_->mu);
  impl_->models = std::move(models);
}

std::string FakeOpenAiUpstream::models_page() const {
  std::lock_guard lock(impl_->mu);
  return RenderModels(impl_->models);
}

std::string FakeOpenAiUpstream::metrics_page() const {
  const std::string running = std::to_string(other_running_.load());
  const std::string waiting = std::to_string(other_waiting_.load());
  switch (queue_format_.load()) {
    case QueueFormat::kLlamaCpp:
      return "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing " + running +
             "\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred " + waiting +
             "\n";
    case QueueFormat::kLlamaCppNoMetrics:
      return "";
    case QueueFormat::kVllm:
      return "# TYPE vllm:num_requests_running "
             "gauge\nvllm:num_requests_running{model_name=\"m\"} " +
             running + ".0\nvllm:num_requests_waiting{model_name=\"m\"} " + waiting + ".0\n";
    case QueueFormat::kSglang:
      return "sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\"} " + running +
             "\nsglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} " + waiting + "\n";
  }
  return "";
}

std::string FakeOpenAiUpstream::slots_page() const {
  nlohmann::json page = nlohmann::json::array();
  const uint32_t slots = slots_.load();
  const uint32_t busy = std::min(slots, other_running_.load());
  for (uint32_t i = 0; i < slots; ++i) {
    const bool processing = i < busy;
    page.push_back({{"id", i},
                    {"n_ctx", 4096},
                    {"is_processing", processing},
                    {"next_token",
                     {{{"has_next_token", processing},
                       {"n_remain", processing ? slot_remaining_.load() : 0}}}}});
  }
  return page.dump();
}

std::map<std::string, int> FakeOpenAiUpstream::models_asked() const {
  std::lock_guard lock(impl_->mu);
  return impl_->models_asked;
}

void FakeOpenAiUpstream::set_delays(Delays delays) {
  std::lock_guard lock(impl_->mu);
  impl_->delays = delays;
}

void FakeOpenAiUpstream::RunDelayed(std::shared_ptr<http::Responder> responder,
                                    std::vector<Step> steps) {
  auto d = std::make_shared<Impl::Delayed>(impl_->io);
  d->responder = std::move(responder);
  d->steps = std::move(steps);
  {
    std::lock_guard lock(impl_->mu);
    impl_->delayed.push_back(d);
  }
  // Each step arms the timer for the next; the handler holds the answer weakly, so the
  // destructor can drop it. Only a pending wait holds `arm` (its own body holds it weakly, or it
  // would never be freed).
  using Arm = std::function<void(std::weak_ptr<Impl::Delayed>)>;
  auto arm = std::make_shared<Arm>();
  *arm = [this, weak_arm = std::weak_ptr<Arm>(arm)](std::weak_ptr<Impl::Delayed> weak) {
    std::shared_ptr<Impl::Delayed> d = weak.lock();
    if (!d) return;
    if (d->next == d->steps.size()) {
      std::lock_guard lock(impl_->mu);
      std::erase(impl_->delayed, d);
      return;
    }
    const Step& step = d->steps[d->next];
    d->timer.expires_after(std::chrono::microseconds(static_cast<int64_t>(step.delay_ms * 1000)));
    d->timer.async_wait([this, arm = weak_arm.lock(), weak](const boost::system::error_code& ec) {
      std::shared_ptr<Impl::Delayed> d = weak.lock();
      if (ec || !d) return;
      d->steps[d->next++].run(*d->responder);
      (*arm)(weak);
    });
  };
  (*arm)(d);
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
  if (req.path == "/slots") return res->Respond(200, kJson, slots_page());
  if (req.path == "/v1/models") return res->Respond(200, kJson, models_page());
  if (req.path == "/metrics") {
    std::string page = metrics_page();
    if (page.empty()) return res->Respond(501, kJson, ErrorBody("metrics are not enabled"));
    return res->Respond(200, {{"content-type", "text/plain; version=0.0.4"}}, std::move(page));
  }
  if (req.path != "/v1/completions" && req.path != "/v1/chat/completions") {
    return res->Respond(404, kJson, ErrorBody("no such endpoint: " + req.path));
  }
  ++completions_;
  switch (mode) {
    case Mode::kOk:
      return Answer(req, std::move(res));
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

void FakeOpenAiUpstream::Answer(const http::Request& req,
                                std::shared_ptr<http::Responder> responder) {
  http::Responder& res = *responder;
  const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return res.Respond(400, kJson, ErrorBody("the body is not a JSON object"));
  const bool chat = req.path == "/v1/chat/completions";
  const uint32_t prompt_tokens = PromptWords(body, chat);
  const uint32_t cached = prompt_tokens / 2;
  const uint32_t max_tokens = body.contains("max_tokens") && body["max_tokens"].is_number_unsigned()
                                  ? std::max<uint32_t>(1, body["max_tokens"].get<uint32_t>())
                                  : 1;
  const std::string model = body.value("model", std::string("fake-model"));
  {
    std::lock_guard lock(impl_->mu);
    ++impl_->models_asked[model];
  }
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
  Delays delays;
  {
    std::lock_guard lock(impl_->mu);
    delays = impl_->delays;
  }
  const double first_ms =
      delays.base_ms + delays.prefill_ms_per_token * static_cast<double>(prompt_tokens - cached);
  const bool timed = first_ms > 0 || delays.decode_ms_per_token > 0;
  const json timings = {{"cache_n", cached},
                        {"prompt_n", prompt_tokens - cached},
                        {"prompt_ms", timed ? first_ms : 1.0}};
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
    a["timings"] = timings;
    if (!timed) return res.Respond(200, kJson, a.dump());
    const double all_ms = first_ms + delays.decode_ms_per_token * (max_tokens - 1);
    return RunDelayed(std::move(responder),
                      {{all_ms, [a](http::Responder& r) { r.Respond(200, kJson, a.dump()); }}});
  }
  std::vector<std::string> events;
  for (uint32_t i = 0; i < max_tokens; ++i) {
    json c = chunk(text, nullptr);
    if (i == 0) c["timings"] = timings;
    events.push_back(Event(c));
  }
  json usage = head;
  usage["choices"] = json::array();
  usage["usage"] = usage_block;
  events.back() += Event(chunk("", "length")) + Event(usage) + "data: [DONE]\n\n";
  res.StartStream(200, {{"content-type", "text/event-stream"}});
  if (!timed) {
    for (std::string& e : events) res.Write(std::move(e));
    return res.End();
  }
  std::vector<Step> steps;
  for (size_t i = 0; i < events.size(); ++i) {
    const bool last = i + 1 == events.size();
    steps.push_back({i == 0 ? first_ms : delays.decode_ms_per_token,
                     [e = std::move(events[i]), last](http::Responder& r) {
                       r.Write(e);
                       if (last) r.End();
                     }});
  }
  RunDelayed(std::move(responder), std::move(steps));
}

}  // namespace hearsay::testkit
