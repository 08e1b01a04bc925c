// InterruptWatcher: turns SIGINT and SIGTERM into a callback on an ordinary thread, so a command
// can stop its load and clean up (kill child processes, remove temp dirs) instead of dying.
//
// The signal handler only writes the signal number into a pipe (async-signal-safe); a watcher
// thread reads it and calls `on_signal(signo)`. The handlers (not a blocked signal mask) are what
// catches the signals, so child processes, which get default dispositions at exec, still react to
// SIGTERM normally. A second signal, when the first has not led to an exit yet, re-raises it with
// the default disposition: the process dies at once, and children die with it through their
// parent-death signal.
//
// Ownership: at most one InterruptWatcher may exist at a time (signal dispositions are
// process-wide). The destructor restores the previous dispositions and joins the thread.
// Thread-safety: on_signal runs on the watcher thread; it must be thread-safe against the rest of
// the program.
#pragma once

#include <functional>
#include <thread>

namespace hearsay::cli {

class InterruptWatcher {
 public:
  explicit InterruptWatcher(std::function<void(int signo)> on_signal);
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  std::function<void(int)> on_signal_;
  std::thread thread_;
};

}  // namespace hearsay::cli
