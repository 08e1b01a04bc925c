// KvEventsSubscriber: see kv_events_subscriber.h.
#include "hearsay/upstream/kv_events_subscriber.h"

#include <spdlog/spdlog.h>

#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace hearsay::upstream {
namespace {

bool ValidEndpoint(std::string_view e) {
  for (std::string_view scheme : {"ipc://", "inproc://"}) {
    if (e.starts_with(scheme)) return e.size() > scheme.size();
  }
  if (!e.starts_with("tcp://")) return false;
  const std::string_view rest = e.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) return false;
  for (char c : rest.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Logs the first few occurrences, then one in every 1000.
bool ShouldLog(uint64_t count) { return count <= 5 || count % 1000 == 0; }

}  // namespace

Status ValidateKvEventsSubscriberOptions(const KvEventsSubscriberOptions& o) {
  if (!ValidEndpoint(o.endpoint)) {
    return InvalidArgumentError("kv events endpoint '" + o.endpoint +
                                "': expected tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  }
  if (!o.replay_endpoint.empty() && !ValidEndpoint(o.replay_endpoint)) {
    return InvalidArgumentError("kv events replay endpoint '" + o.replay_endpoint +
                                "': expected tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  }
  if (o.replay_timeout.count() <= 0 || o.poll_interval.count() <= 0) {
    return InvalidArgumentError("kv events: replay_timeout and poll_interval must be positive");
  }
  return OkStatus();
}

struct KvEventsSubscriber::Impl {
  zmq::context_t context{1};
  zmq::socket_t sub;
  std::unique_ptr<zmq::socket_t> dealer;  // replay; recreated after a failed replay
  std::optional<uint64_t> expected;

  std::atomic<uint64_t> messages{0}, batches{0}, malformed{0}, gaps{0}, replays{0},
      replayed_batches{0}, replay_failures{0}, resets{0}, restarts{0}, catch_ups{0};
};

KvEventsSubscriber::KvEventsSubscriber(KvEventsSubscriberOptions options, Post post,
                                       Handlers handlers)
    : options_(std::move(options)),
      post_(std::move(post)),
      handlers_(std::move(handlers)),
      impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<KvEventsSubscriber>> KvEventsSubscriber::Start(
    KvEventsSubscriberOptions options, Post post, Handlers handlers) {
  HEARSAY_RETURN_IF_ERROR(ValidateKvEventsSubscriberOptions(options));
  if (!post || !handlers.on_batch || !handlers.on_reset) {
    return InvalidArgumentError("kv events subscriber: no post hook or handlers");
  }
  std::unique_ptr<KvEventsSubscriber> s(
      new KvEventsSubscriber(std::move(options), std::move(post), std::move(handlers)));
  try {
    Impl& impl = *s->impl_;
    impl.sub = zmq::socket_t(impl.context, zmq::socket_type::sub);
    impl.sub.set(zmq::sockopt::linger, 0);
    impl.sub.set(zmq::sockopt::subscribe, s->options_.topic);
    impl.sub.connect(s->options_.endpoint);
  } catch (const zmq::error_t& e) {
    return UnavailableError("kv events: cannot connect to " + s->options_.endpoint + ": " +
                            e.what());
  }
  // Thread creation orders the socket's setup before its use on the new thread (ZMQ sockets
  // may move between threads across a full barrier).
  s->thread_ = std::thread([raw = s.get()] { raw->Run(); });
  return s;
}

KvEventsSubscriber::~KvEventsSubscriber() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

KvEventsSubscriberStats KvEventsSubscriber::stats() const {
  const Impl& i = *impl_;
  KvEventsSubscriberStats s;
  s.messages = i.messages.load();
  s.batches = i.batches.load();
  s.malformed = i.malformed.load();
  s.gaps = i.gaps.load();
  s.replays = i.replays.load();
  s.replayed_batches = i.replayed_batches.load();
  s.replay_failures = i.replay_failures.load();
  s.catch_ups = i.catch_ups.load();
  s.resets = i.resets.load();
  s.restarts = i.restarts.load();
  return s;
}

namespace {

struct Frames {
  std::vector<zmq::message_t> parts;
  std::string_view At(size_t i) const { return parts[i].to_string_view(); }
};

}  // namespace

void KvEventsSubscriber::Run() {
  Impl& impl = *impl_;
  auto reset = [&](std::string reason) {
    impl.resets.fetch_add(1);
    spdlog::warn(
        "kv events ({}): {}; dropping the engine-event view (prediction and evidence "
        "only until new events rebuild it)",
        options_.endpoint, reason);
    post_([h = handlers_.on_reset, r = std::move(reason)] { h(r); });
  };
  // Decodes and hands one batch to the core; false when malformed.
  auto deliver = [&](std::string_view seq, std::string_view payload) {
    Result<KvEventBatch> batch = DecodeKvEventBatch(seq, payload);
    if (!batch.ok()) {
      const uint64_t n = impl.malformed.fetch_add(1) + 1;
      if (ShouldLog(n)) {
        spdlog::warn("kv events ({}): skipped a malformed batch ({} so far): {}", options_.endpoint,
                     n, batch.status().message());
      }
      return false;
    }
    impl.batches.fetch_add(1);
    post_([h = handlers_.on_batch, b = std::move(batch).value()]() mutable { h(std::move(b)); });
    return true;
  };
  // Asks for [from, to) and delivers it. With `whole`, false (nothing delivered) unless the
  // whole range came back; without it (the catch-up at start) the contiguous run of batches that
  // ends at to - 1 is delivered, however short: older batches may have left the publisher's
  // buffer, and the view skips blocks whose parents it never saw.
  auto replay = [&](uint64_t from, uint64_t to, bool whole) -> bool {
    if (options_.replay_endpoint.empty()) return false;
    std::map<uint64_t, std::string> got;
    bool ended = false;
    try {
      if (!impl.dealer) {
        impl.dealer = std::make_unique<zmq::socket_t>(impl.context, zmq::socket_type::dealer);
        impl.dealer->set(zmq::sockopt::linger, 0);
        impl.dealer->connect(options_.replay_endpoint);
      }
      const std::string start = EncodeKvSeq(from);
      impl.dealer->send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
      impl.dealer->send(zmq::buffer(start), zmq::send_flags::none);
      const auto deadline = std::chrono::steady_clock::now() + options_.replay_timeout;
      while (!ended && !stop_.load()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        zmq::pollitem_t item{impl.dealer->handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, left);
        if ((item.revents & ZMQ_POLLIN) == 0) continue;
        Frames f;
        if (!zmq::recv_multipart(*impl.dealer, std::back_inserter(f.parts),
                                 zmq::recv_flags::dontwait)) {
          continue;
        }
        // [empty, seq, payload] (vLLM) or [empty, topic, seq, payload] (newer vLLM).
        size_t i = 0;
        if (i < f.parts.size() && f.parts[i].size() == 0) ++i;
        const size_t n = f.parts.size() - i;
        if (n != 2 && n != 3) break;
        const size_t seq_at = i + n - 2;
        Result<uint64_t> seq = DecodeKvSeq(f.At(seq_at));
        if (!seq.ok()) break;
        if (*seq == kKvReplayEndSeq || f.parts[seq_at + 1].size() == 0) {
          ended = true;
          break;
        }
        if (*seq >= from && *seq < to) got.emplace(*seq, std::string(f.At(seq_at + 1)));
        if (got.size() > options_.max_replay_batches) break;
      }
    } catch (const zmq::error_t& e) {
      spdlog::warn("kv events: replay from {} failed: {}", options_.replay_endpoint, e.what());
      ended = false;
    }
    if (!ended || (whole && got.size() != to - from)) {
      // A late answer must not be read as the next replay's: start over with a fresh socket.
      impl.dealer.reset();
      impl.replay_failures.fetch_add(1);
      return false;
    }
    // The contiguous run ending at to - 1 (all of `got` when the range is whole).
    uint64_t first = to;
    while (first > from && got.contains(first - 1)) --first;
    for (auto it = got.lower_bound(first); it != got.end(); ++it) {
      impl.replayed_batches.fetch_add(1);
      deliver(EncodeKvSeq(it->first), it->second);
    }
    if (whole) impl.replays.fetch_add(1);
    return true;
  };

  while (!stop_.load()) {
    Frames f;
    try {
      zmq::pollitem_t item{impl.sub.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, options_.poll_interval);
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      if (!zmq::recv_multipart(impl.sub, std::back_inserter(f.parts), zmq::recv_flags::dontwait)) {
        continue;
      }
    } catch (const zmq::error_t& e) {
      spdlog::error("kv events ({}): receive failed: {}", options_.endpoint, e.what());
      continue;
    }
    impl.messages.fetch_add(1);
    Result<uint64_t> seq =
        f.parts.size() == 3
            ? DecodeKvSeq(f.At(1))
            : Result<uint64_t>(DataLossError("expected 3 frames [topic, seq, payload]"));
    if (!seq.ok()) {
      const uint64_t n = impl.malformed.fetch_add(1) + 1;
      if (ShouldLog(n)) {
        spdlog::warn("kv events ({}): skipped a malformed message ({} so far): {}",
                     options_.endpoint, n, seq.status().message());
      }
      continue;
    }
    if (impl.expected && *seq < *impl.expected) {
      impl.restarts.fetch_add(1);
      reset("the publisher restarted (sequence " + std::to_string(*seq) + " after " +
            std::to_string(*impl.expected - 1) + ")");
      impl.expected = 0;
    }
    if (!impl.expected && *seq > 0 && !options_.replay_endpoint.empty()) {
      // The first batch since start: the engine may have cached blocks before this node
      // subscribed. Its replay buffer holds the latest of them; catch up from there.
      const uint64_t from =
          *seq > options_.max_replay_batches ? *seq - options_.max_replay_batches : 0;
      if (replay(from, *seq, /*whole=*/false)) {
        impl.catch_ups.fetch_add(1);
      } else {
        spdlog::info(
            "kv events ({}): no catch-up from the replay socket at start; the view starts "
            "with batch {}",
            options_.endpoint, *seq);
      }
    }
    if (impl.expected && *seq > *impl.expected) {
      impl.gaps.fetch_add(1);
      if (!replay(*impl.expected, *seq, /*whole=*/true)) {
        reset("batches " + std::to_string(*impl.expected) + ".." + std::to_string(*seq - 1) +
              " lost" +
              (options_.replay_endpoint.empty() ? " (no replay endpoint)" : " and not replayed"));
      }
    }
    deliver(f.At(1), f.At(2));
    impl.expected = *seq + 1;
  }
}

}  // namespace hearsay::upstream
