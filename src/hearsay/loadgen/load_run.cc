#include "hearsay/loadgen/load_run.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74 needs std::exchange declared

#include "hearsay/loadgen/stream_recorder.h"

namespace hearsay::loadgen {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

Status ValidateLoadOptions(const LoadOptions& o) {
  if (o.targets.empty()) return InvalidArgumentError("at least one target is needed");
  for (const std::string& t : o.targets) {
    if (t.empty()) return InvalidArgumentError("empty target address");
  }
  if (o.mode == LoadMode::kClosedLoop && o.concurrency < 1) {
    return InvalidArgumentError("concurrency must be >= 1");
  }
  if (o.max_in_flight < 1) return InvalidArgumentError("max_in_flight must be >= 1");
  if (o.duration < Duration::zero()) return InvalidArgumentError("duration must be >= 0");
  if (o.connect_timeout <= Duration::zero() || o.response_timeout <= Duration::zero() ||
      o.idle_timeout <= Duration::zero()) {
    return InvalidArgumentError("timeouts must be > 0");
  }
  return OkStatus();
}

// Everything one run touches; lives on the run's thread except for the Cancel() post.
// Invariants: in_flight_ holds exactly the requests sent whose on_done has not run; results_
// gets one entry per request issued (sent or skipped); issuing_done_ never goes back to false.
struct LoadRun::State {
  struct InFlight {
    explicit InFlight(StreamRecorder r) : recorder(std::move(r)) {}
    StreamRecorder recorder;
    std::shared_ptr<http::RequestHandle> handle;
  };

  State(const LoadOptions& o, RequestSource& s)
      : options(o), source(s), client(io, ClientOptionsOf(o)), timer(io) {}

  static http::ClientOptions ClientOptionsOf(const LoadOptions& o) {
    http::ClientOptions c;
    c.tls = o.tls;
    return c;
  }

  Duration Now() const { return SteadyClock::now() - start; }

  void Start() {
    start = SteadyClock::now();
    if (options.mode == LoadMode::kOpenLoop) {
      ScheduleNext();
    } else {
      FillClosedLoop();
    }
    MaybeFinish();
  }

  // The next request to issue, or nullopt once issuing is over (bounds reached, workload ended,
  // or cancelled).
  std::optional<LoadRequest> NextRequest() {
    if (issuing_done) return std::nullopt;
    const bool time_up = options.duration > Duration::zero() &&
                         options.mode == LoadMode::kClosedLoop && Now() >= options.duration;
    if (cancelled || time_up || (options.max_requests > 0 && issued >= options.max_requests)) {
      issuing_done = true;
      return std::nullopt;
    }
    std::optional<LoadRequest> r = source.Next();
    if (!r || (options.mode == LoadMode::kOpenLoop && options.duration > Duration::zero() &&
               r->arrival > options.duration)) {
      issuing_done = true;
      return std::nullopt;
    }
    ++issued;
    r->target %= static_cast<uint32_t>(options.targets.size());
    return r;
  }

  void ScheduleNext() {
    pending = NextRequest();
    if (!pending) return;
    timer.expires_at(start + pending->arrival);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || cancelled || !pending) return;
      LoadRequest r = std::move(*pending);
      pending.reset();
      if (in_flight.size() >= options.max_in_flight) {
        RequestResult skipped;
        skipped.id = r.id;
        skipped.target = r.target;
        skipped.sent = Now();
        skipped.error = ErrorKind::kSkipped;
        skipped.error_message = "too many requests in flight";
        Record(std::move(skipped));
      } else {
        Send(std::move(r));
      }
      ScheduleNext();
      MaybeFinish();
    });
  }

  void FillClosedLoop() {
    while (in_flight.size() < options.concurrency) {
      std::optional<LoadRequest> r = NextRequest();
      if (!r) return;
      Send(std::move(*r));
    }
  }

  void Send(LoadRequest r) {
    const uint64_t key = next_key++;
    auto f = std::make_shared<InFlight>(StreamRecorder(r.id, r.target, Now()));
    http::ClientRequest request;
    request.method = "POST";
    request.host_port = options.targets[r.target];
    request.target = std::move(r.path);
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    if (!options.api_key.empty()) {
      request.headers.emplace_back("Authorization", "Bearer " + options.api_key);
    }
    request.body = std::move(r.body);
    request.connect_timeout = options.connect_timeout;
    request.response_timeout = options.response_timeout;
    request.idle_timeout = options.idle_timeout;
    http::ResponseHandlers handlers;
    handlers.on_headers = [f](int status, const http::Headers& headers) {
      const std::optional<std::string_view> type = http::FindHeader(headers, "content-type");
      f->recorder.OnHeaders(status, type && type->starts_with("application/json"));
    };
    handlers.on_body = [this, f](std::string_view chunk) { f->recorder.OnBody(chunk, Now()); };
    handlers.on_done = [this, f, key](Status status) {
      in_flight.erase(key);
      Record(f->recorder.Finish(status, Now()));
      if (options.mode == LoadMode::kClosedLoop) FillClosedLoop();
      MaybeFinish();
    };
    f->handle = client.Send(std::move(request), std::move(handlers));
    in_flight.emplace(key, std::move(f));
  }

  void Record(RequestResult r) {
    if (!r.ok()) ++failed;
    last_result = Now();
    results.push_back(std::move(r));
    ReportProgress(false);
  }

  void ReportProgress(bool final) {
    if (!options.progress) return;
    const SteadyClock::time_point now = SteadyClock::now();
    if (!final && now - last_progress < std::chrono::milliseconds(50)) return;
    last_progress = now;
    Progress p;
    p.finished = results.size();
    p.failed = failed;
    p.total = options.max_requests;
    p.elapsed = now - start;
    p.duration = options.duration;
    options.progress(p);
  }

  void MaybeFinish() {
    if (!issuing_done || !in_flight.empty() || finished) return;
    finished = true;
    timer.cancel();
    ReportProgress(true);
    io.stop();
  }

  void CancelAll() {
    if (cancelled) return;
    cancelled = true;
    issuing_done = true;
    pending.reset();
    timer.cancel();
    // Cancel() makes each on_done run later, which erases the entry; iterate over a copy.
    std::vector<std::shared_ptr<InFlight>> open;
    for (auto& [key, f] : in_flight) open.push_back(f);
    for (auto& f : open) {
      if (f->handle) f->handle->Cancel();
    }
    MaybeFinish();
  }

  const LoadOptions& options;
  RequestSource& source;
  asio::io_context io;
  http::Client client;
  asio::steady_timer timer;
  SteadyClock::time_point start{};
  SteadyClock::time_point last_progress{};
  std::optional<LoadRequest> pending;
  std::unordered_map<uint64_t, std::shared_ptr<InFlight>> in_flight;
  std::vector<RequestResult> results;
  Duration last_result{0};
  uint64_t next_key = 0;
  uint64_t issued = 0;
  uint64_t failed = 0;
  bool issuing_done = false;
  bool cancelled = false;
  bool finished = false;
};

LoadRun::LoadRun(LoadOptions options, RequestSource source)
    : options_(std::move(options)), source_(std::move(source)) {}

LoadRun::~LoadRun() = default;

Result<RunOutput> LoadRun::Run() {
  HEARSAY_RETURN_IF_ERROR(ValidateLoadOptions(options_));
  std::shared_ptr<State> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ran_) return FailedPreconditionError("a LoadRun runs once");
    ran_ = true;
    state = std::make_shared<State>(options_, source_);
    state_ = state;
  }
  RunOutput out;
  if (!cancel_requested_.load()) {
    auto guard = asio::make_work_guard(state->io);
    asio::post(state->io, [s = state.get()] { s->Start(); });
    state->io.run();
  }
  out.cancelled = cancel_requested_.load() || state->cancelled;
  out.results = std::move(state->results);
  out.elapsed = state->last_result;
  out.client = state->client.stats();
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.reset();
  }
  return out;
}

void LoadRun::Cancel() {
  cancel_requested_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  // The handler runs inside io.run() or not at all (it is destroyed with the io_context), so a
  // raw pointer is safe: Run() drops the state only after io.run() has returned.
  if (state_) asio::post(state_->io, [s = state_.get()] { s->CancelAll(); });
}

}  // namespace hearsay::loadgen
