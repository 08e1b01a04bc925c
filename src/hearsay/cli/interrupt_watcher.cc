#include "hearsay/cli/interrupt_watcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <utility>

#include "hearsay/common/check.h"

namespace hearsay::cli {

namespace {

// The pipe the handler writes to; -1 when no watcher exists. Process-wide by nature, like the
// signal dispositions themselves.
std::atomic<int> g_write_fd{-1};
std::atomic<int> g_signals_seen{0};
struct sigaction g_old_int;
struct sigaction g_old_term;

extern "C" void OnSignal(int signo) {
  if (g_signals_seen.fetch_add(1) >= 1) {
    // Second signal: die now with the default action.
    ::signal(signo, SIG_DFL);
    ::raise(signo);
    return;
  }
  const int fd = g_write_fd.load();
  if (fd < 0) return;
  const unsigned char byte = static_cast<unsigned char>(signo);
  const int saved = errno;
  ssize_t ignored = ::write(fd, &byte, 1);
  (void)ignored;
  errno = saved;
}

}  // namespace

InterruptWatcher::InterruptWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)) {
  int fds[2];
  HEARSAY_CHECK(::pipe2(fds, O_CLOEXEC) == 0);
  HEARSAY_CHECK(g_write_fd.exchange(fds[1]) == -1);  // one watcher at a time
  g_signals_seen.store(0);
  const int read_fd = fds[0];
  thread_ = std::thread([this, read_fd] {
    while (true) {
      unsigned char byte = 0;
      const ssize_t n = ::read(read_fd, &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 0) break;  // 0: the destructor asks the thread to end
      on_signal_(byte);
    }
    ::close(read_fd);
  });
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptWatcher::~InterruptWatcher() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  const int fd = g_write_fd.exchange(-1);
  const unsigned char stop = 0;
  ssize_t ignored = ::write(fd, &stop, 1);
  (void)ignored;
  thread_.join();
  ::close(fd);
}

}  // namespace hearsay::cli
