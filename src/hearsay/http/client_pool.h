// The state http::Client (client.h) shares with its in-flight exchanges: the options, the counters
// and the pool of idle keep-alive connections per host:port (client_pool.cc).
//
// Thread-safety: the fields marked "guarded by mu" under mu; the pool's methods from any thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>  // before Asio (std::exchange on g++ 12 with Boost 1.74)
#include <vector>

#include "hearsay/http/client.h"

namespace hearsay::http {

class Exchange;

// One connection: its TCP socket and, on a TLS client, the TLS stream over it. Shared, because
// the stream refers to the socket and its pending operations to both: each TLS operation holds
// the connection until it completes, even after its exchange let go.
struct ClientConnection {
  explicit ClientConnection(boost::asio::io_context& io) : socket(io) {}
  boost::asio::ip::tcp::socket socket;
  std::shared_ptr<boost::asio::ssl::context> tls_context;  // keeps tls's context alive
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls;
};

struct Client::State : std::enable_shared_from_this<Client::State> {
  State(boost::asio::io_context& io_context, ClientOptions opts)
      : io(io_context),
        options(std::move(opts)),
        sweep_strand(boost::asio::make_strand(io_context)),
        sweep_timer(sweep_strand) {}

  struct IdleConnection {
    std::shared_ptr<ClientConnection> connection;
    std::chrono::steady_clock::time_point since;
  };

  // A live pooled connection under `key` (host:port, and the peer's id with TLS), or null.
  std::shared_ptr<ClientConnection> TakeIdle(const std::string& key);
  // Pools `connection` if there is room, else closes it.
  void PutIdle(const std::string& key, std::shared_ptr<ClientConnection> connection);
  void Sweep();
  void CloseIdle();

  boost::asio::io_context& io;
  const ClientOptions options;
  boost::asio::strand<boost::asio::io_context::executor_type> sweep_strand;
  boost::asio::steady_timer sweep_timer;  // sweep_strand only

  std::mutex mu;
  // Per host:port, oldest first. Guarded by mu.
  std::unordered_map<std::string, std::vector<IdleConnection>> idle;
  size_t idle_count = 0;                                            // guarded by mu
  bool sweep_armed = false;                                         // guarded by mu
  bool shut_down = false;                                           // guarded by mu
  uint64_t next_exchange = 0;                                       // guarded by mu
  std::unordered_map<uint64_t, std::weak_ptr<Exchange>> in_flight;  // guarded by mu

  struct Counters {
    std::atomic<uint64_t> requests{0}, opened{0}, reused{0}, stale{0}, retries{0}, failures{0},
        tls_peer_mismatches{0};
  } counters;
};

}  // namespace hearsay::http
