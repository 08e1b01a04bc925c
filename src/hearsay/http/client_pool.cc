#include "hearsay/http/client_pool.h"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>

namespace hearsay::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

namespace {

SteadyClock::duration ToSteady(Duration d) {
  return std::chrono::duration_cast<SteadyClock::duration>(d);
}

// Idle connections pooled longer than this are probed for a close before reuse.
constexpr SteadyClock::duration kProbeIdleAfter = std::chrono::milliseconds(50);

// True if an idle pooled socket has been closed (or written to) by the server since it was
// pooled; such a socket cannot carry a new request.
bool IsStale(tcp::socket& socket) {
  char byte;
  ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK);
  return true;  // 0: the server closed it; > 0: unsolicited bytes
}

void Close(ClientConnection& c) {
  error_code ec;
  c.socket.close(ec);
}

}  // namespace

std::shared_ptr<ClientConnection> Client::State::TakeIdle(const std::string& host_port) {
  std::vector<std::shared_ptr<ClientConnection>> discard;
  std::shared_ptr<ClientConnection> found;
  {
    std::lock_guard lock(mu);
    auto it = idle.find(host_port);
    if (it == idle.end()) return nullptr;
    auto now = SteadyClock::now();
    auto& list = it->second;
    // Newest first: the most recently used connection is the least likely to have been closed.
    while (!list.empty()) {
      IdleConnection c = std::move(list.back());
      list.pop_back();
      idle_count--;
      const auto idle_for = now - c.since;
      // A connection pooled moments ago is not probed (a system call per request under load):
      // servers close idle connections after seconds, and a reused connection that fails before
      // the response is replayed on a fresh one where that is safe.
      if (idle_for > ToSteady(options.idle_expiry) ||
          (idle_for > kProbeIdleAfter && IsStale(c.connection->socket))) {
        counters.stale.fetch_add(1, std::memory_order_relaxed);
        discard.push_back(std::move(c.connection));
        continue;
      }
      found = std::move(c.connection);
      break;
    }
    if (list.empty()) idle.erase(it);
  }
  for (auto& c : discard) Close(*c);
  return found;
}

void Client::State::PutIdle(const std::string& host_port,
                            std::shared_ptr<ClientConnection> connection) {
  bool arm = false;
  {
    std::lock_guard lock(mu);
    auto& list = idle[host_port];
    if (!shut_down && list.size() < options.max_idle_per_host) {
      list.push_back(IdleConnection{std::move(connection), SteadyClock::now()});
      idle_count++;
      arm = !std::exchange(sweep_armed, true);
    } else if (list.empty()) {
      idle.erase(host_port);
    }
  }
  if (connection) Close(*connection);
  if (arm) {
    asio::post(sweep_strand, [self = shared_from_this()] {
      self->sweep_timer.expires_after(ToSteady(self->options.idle_expiry));
      self->sweep_timer.async_wait([self](error_code ec) {
        if (!ec) self->Sweep();
      });
    });
  }
}

// Closes expired idle connections, so the pool does not hold sockets servers have given up on.
void Client::State::Sweep() {
  std::vector<std::shared_ptr<ClientConnection>> discard;
  bool rearm = false;
  {
    std::lock_guard lock(mu);
    auto now = SteadyClock::now();
    for (auto it = idle.begin(); it != idle.end();) {
      auto& list = it->second;
      size_t keep = 0;
      for (auto& c : list) {
        if (now - c.since > ToSteady(options.idle_expiry) || IsStale(c.connection->socket)) {
          discard.push_back(std::move(c.connection));
        } else {
          list[keep++] = std::move(c);
        }
      }
      idle_count -= list.size() - keep;
      list.erase(list.begin() + static_cast<ptrdiff_t>(keep), list.end());
      it = list.empty() ? idle.erase(it) : std::next(it);
    }
    sweep_armed = rearm = idle_count > 0 && !shut_down;
  }
  for (auto& c : discard) Close(*c);
  if (rearm) {
    sweep_timer.expires_after(ToSteady(options.idle_expiry) / 2);
    sweep_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->Sweep();
    });
  }
}

void Client::State::CloseIdle() {
  std::unordered_map<std::string, std::vector<IdleConnection>> taken;
  {
    std::lock_guard lock(mu);
    taken.swap(idle);
    idle_count = 0;
  }
  for (auto& [_, list] : taken) {
    for (auto& c : list) Close(*c.connection);
  }
}

}  // namespace hearsay::http
