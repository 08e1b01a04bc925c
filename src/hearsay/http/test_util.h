// Helpers for the http module's tests: an io_context on its own thread, and a blocking raw TCP
// client that sends exact bytes (malformed, slow, pipelined) and reads what comes back.
//
// Test-only; every wait is bounded so a broken server fails a test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hearsay/http/server.h"

namespace hearsay::http::testing {

// An io_context run by one background thread for the fixture's lifetime.
//
// Stop() joins the thread, then drains on the caller's thread what was already queued or
// completes as a result: the cancellations that destroyed clients and servers posted, and the
// completions of the sockets those close. Without the drain they would never run, and requests
// still in flight at teardown would end without on_done. Handlers that run in the drain must
// only touch what they own or what outlives Stop(): destroy fixtures' objects before it, or
// have their handlers check a liveness token.
class IoThread {
 public:
  IoThread() : work_(boost::asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~IoThread() { Stop(); }
  // Idempotent: only the first call joins and drains.
  void Stop() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
    io_.restart();
    io_.poll();
  }
  // Returns once everything already queued on the loop has run: what a test did before it (a
  // Close, a Cancel, a completion it observed) has had its effects. False after 10 s, or when
  // called on the loop's own thread or after Stop().
  bool Drain() {
    if (on_thread() || !thread_.joinable()) return false;
    std::promise<void> done;
    boost::asio::post(io_, [&] { done.set_value(); });
    return done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }
  boost::asio::io_context& io() { return io_; }
  bool on_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

// A blocking TCP client on 127.0.0.1 with a receive timeout.
class RawClient {
 public:
  explicit RawClient(uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    SetTimeout(std::chrono::seconds(5));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void SetTimeout(std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000),
               static_cast<suseconds_t>(t.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // False if the peer closed or reset.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until `needle` is in what was read (kept across calls), EOF, or the timeout.
  bool ReadUntil(std::string_view needle) {
    while (data_.find(needle) == std::string::npos) {
      if (!ReadSome()) return false;
    }
    return true;
  }
  // Reads until the peer closes (true) or the timeout (false).
  bool ReadUntilClosed() {
    while (true) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      data_.append(buf, static_cast<size_t>(n));
    }
  }
  // One response with a Content-Length body; removed from the data read so far.
  std::string ReadResponse() {
    if (!ReadUntil("\r\n\r\n")) return {};
    size_t head_end = data_.find("\r\n\r\n") + 4;
    size_t length = 0;
    size_t cl = data_.find("Content-Length: ");
    if (cl != std::string::npos && cl < head_end) length = std::stoul(data_.substr(cl + 16));
    while (data_.size() < head_end + length) {
      if (!ReadSome()) return {};
    }
    std::string response = data_.substr(0, head_end + length);
    data_.erase(0, head_end + length);
    return response;
  }
  const std::string& data() const { return data_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes with a reset instead of a FIN.
  void Reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    Close();
  }

 private:
  bool ReadSome() {
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    data_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string data_;
};

// Keeps responders alive for a test's duration (a dropped unfinished responder ends its request).
class ResponderKeeper {
 public:
  void Keep(std::shared_ptr<Responder> r) {
    std::lock_guard lock(mu_);
    held_.push_back(std::move(r));
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Responder>> held_;
};

// Waits for `f` to be ready, at most `timeout`.
template <typename T>
bool Ready(std::future<T>& f, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return f.wait_for(timeout) == std::future_status::ready;
}

}  // namespace hearsay::http::testing
