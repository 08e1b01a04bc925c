// FakeOpenAiUpstream: an OpenAI-compatible inference server on 127.0.0.1 (an ephemeral port), for
// tests of whatever sits in front of an engine: the node's upstream engine, `hearsay node
// --engine openai`, the load generator. It is shaped like llama.cpp's llama-server where a node
// looks: GET /health, GET /slots, GET /metrics, and `timings` (cache_n, prompt_n) in the first
// streamed chunk. A test switches its behaviour at any moment with set_mode().
//
// Its own queue: the requests of other clients set by set_other_clients() are published in the
// shape set_queue_format() picks: llama-server's /metrics gauges (processing, deferred) with
// --metrics or without it (/metrics answers 501 and only /slots shows the running ones as busy
// slots), vLLM's or SGLang's /metrics gauges. /slots lists set_slots() slots (default none: "[]"),
// the first min(running, slots) busy, each with the output tokens it may still make.
//
// GET /v1/models lists the models set by set_models() (default one, "fake-model") in the shape of
// llama.cpp, vLLM or SGLang (served_models.h), adapters as vLLM lists them (entries with a
// `parent`). set_delays() makes completions take real time, as an engine's prefill and decode do:
// the first chunk comes base + prefill x uncached words after the request, each further token
// decode later (streamed; an answer in one piece comes after all of it).
//
// The answer to a completion (Mode::kOk) is derived from the request, so a test can check what
// came back: with "stream": true, max_tokens chunks (1 when absent) of text() each as SSE, then a
// chunk with finish_reason "length", a usage chunk and [DONE]; otherwise one JSON answer with
// the same text (max_tokens copies of text()), usage and timings. Usage counts the prompt's
// words as its tokens (a chat request's message contents) and reports half of them, rounded
// down, as cached.
//
// Ownership: the fake owns its server and the I/O thread that runs it; the destructor closes every
// connection (requests held by kSilent are dropped then) and joins the thread.
//
// Thread-safety: every public method may be called from any thread, also while requests run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hearsay::http {
struct Request;
class Responder;
}  // namespace hearsay::http

namespace hearsay::testkit {

class FakeOpenAiUpstream {
 public:
  enum class ModelsFormat { kLlamaCpp, kVllm, kSglang };
  // What GET /v1/models lists: `models` (each with `context_length`), and `adapters` of the
  // first model.
  struct Models {
    ModelsFormat format = ModelsFormat::kLlamaCpp;
    std::vector<std::string> models = {"fake-model"};
    std::vector<std::string> adapters;
    uint32_t context_length = 4096;
  };
  // Completion times in real time (all 0 by default: answers at once).
  struct Delays {
    double base_ms = 0;               // before the first chunk, whatever the prompt
    double prefill_ms_per_token = 0;  // per uncached prompt word (the half not cached)
    double decode_ms_per_token = 0;   // between output tokens
  };
  enum class Mode {
    kOk,           // answer every completion (see the file comment)
    kDown,         // 503 "Loading model" to every request, /health included (a loading engine)
    kServerError,  // completions: the status and message set by set_server_error()
    kGarbage,      // completions: 200 and an SSE event that is not JSON
    kTooBusy,      // completions: 429 with Retry-After: 1
    kSilent,       // completions: never answered (held until the fake closes)
  };

  // Starts listening; aborts the test process if no port can be bound (a broken test machine).
  FakeOpenAiUpstream();
  ~FakeOpenAiUpstream();
  FakeOpenAiUpstream(const FakeOpenAiUpstream&) = delete;
  FakeOpenAiUpstream& operator=(const FakeOpenAiUpstream&) = delete;

  uint16_t port() const;
  // "127.0.0.1:<port>", and "http://127.0.0.1:<port>".
  std::string address() const;
  std::string url() const;
  // Stops listening and closes every connection: the port refuses from now on (a dead engine).
  void Close();

  void set_mode(Mode mode) { mode_ = mode; }
  Mode mode() const { return mode_; }
  // The status of GET /health outside kDown (200; 503 plays an engine still loading its model).
  void set_health_status(int status) { health_status_ = status; }
  // Requests of other clients (not through hearsay), running and waiting (default none).
  void set_other_clients(uint32_t running, uint32_t waiting) {
    other_running_ = running;
    other_waiting_ = waiting;
  }
  enum class QueueFormat { kLlamaCpp, kLlamaCppNoMetrics, kVllm, kSglang };
  void set_queue_format(QueueFormat format) { queue_format_ = format; }
  // Slots /slots lists, and the output tokens each busy one may still make (default 0, 100).
  void set_slots(uint32_t slots, uint32_t remaining_tokens = 100) {
    slots_ = slots;
    slot_remaining_ = remaining_tokens;
  }
  // The /metrics page (empty when the format publishes none) and the /slots page, as now.
  std::string metrics_page() const;
  std::string slots_page() const;
  // What kServerError answers (default 500, "the fake engine failed").
  void set_server_error(int status, std::string message);
  // The text of each answer chunk (default " tok").
  void set_text(std::string text);
  std::string text() const;
  void set_models(Models models);
  // The /v1/models page as it is now (what the fake answers).
  std::string models_page() const;
  void set_delays(Delays delays);

  // Completions answered (Mode::kOk), by the "model" their body named.
  std::map<std::string, int> models_asked() const;
  // Completion requests received (any mode but kDown), and requests of any kind.
  int completions() const { return completions_; }
  int requests() const { return requests_; }

 private:
  struct Impl;
  // Runs on the fake's I/O thread.
  void Handle(http::Request request, std::shared_ptr<http::Responder> responder);
  void Answer(const http::Request& request, std::shared_ptr<http::Responder> responder);
  // Runs `steps` in order on the I/O thread, each `delay_ms` after the one before.
  struct Step {
    double delay_ms;
    std::function<void(http::Responder&)> run;
  };
  void RunDelayed(std::shared_ptr<http::Responder> responder, std::vector<Step> steps);

  std::unique_ptr<Impl> impl_;
  std::atomic<Mode> mode_{Mode::kOk};
  std::atomic<int> health_status_{200};
  std::atomic<uint32_t> other_running_{0};
  std::atomic<uint32_t> other_waiting_{0};
  std::atomic<QueueFormat> queue_format_{QueueFormat::kLlamaCpp};
  std::atomic<uint32_t> slots_{0};
  std::atomic<uint32_t> slot_remaining_{100};
  std::atomic<int> completions_{0};
  std::atomic<int> requests_{0};
};

}  // namespace hearsay::testkit
