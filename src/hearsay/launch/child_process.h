// ChildProcess: one child process started with fork+exec whose stdout and stderr go to a log
// file, and which dies with its parent (PR_SET_PDEATHSIG), so a crashed or killed test never
// leaves daemons behind. The object owns the process: its destructor kills (SIGKILL) and reaps it.
//
// PR_SET_PDEATHSIG fires when the *thread* that spawned the child exits, so spawn from a thread
// that outlives the child (a test body, main).
//
// Thread-safety: not thread-safe; one owner drives it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::launch {

class ChildProcess {
 public:
  // Starts `argv` (argv[0] is the program path, not searched in PATH), appending its stdout and
  // stderr to `log_path` (created if needed). NOT_FOUND/PERMISSION_DENIED when the program cannot
  // be executed; the exec error is reported by the parent, not only in the log.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                     const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True until the process has been reaped (by Poll, Wait or Kill).
  bool running();
  // Sends `signal` if the process still runs.
  void Signal(int signal);
  // Waits up to `timeout` for the process to exit; DEADLINE_EXCEEDED if it is still running.
  Status Wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap. Idempotent.
  void Kill();
  // Once reaped: a description of how it ended ("exit status 1", "killed by signal 9").
  std::string ExitDescription() const;
  // Once reaped: the exit code, or -signal if a signal ended it.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  // Reaps without blocking; true if the process has exited.
  bool Poll();

  pid_t pid_;
  std::optional<int> exit_code_;
};

// The last `max_lines` lines of the file at `path` (at most 64 KiB are read), or a note that it
// cannot be read.
std::string TailFile(const std::string& path, size_t max_lines);

}  // namespace hearsay::launch
