// fork+exec with a log file and parent-death signal (see the header).
#include "hearsay/launch/child_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

namespace hearsay::launch {

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                          const std::string& log_path) {
  if (argv.empty()) return InvalidArgumentError("spawn: empty argv");
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls are allowed (the parent may have other threads).
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return PermissionDeniedError("spawn: cannot open log " + log_path + ": " +
                                 std::strerror(errno));
  }
  // The child writes its exec errno here; the pipe closes on a successful exec (O_CLOEXEC).
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(log_fd);
    return InternalError(std::string("spawn: pipe: ") + std::strerror(e));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(log_fd);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return ResourceExhaustedError(std::string("spawn: fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    // Descriptors the parent opened without O_CLOEXEC (sockets of other tests' clients) must not
    // leak into the daemon; best effort on kernels without CLOSE_RANGE_CLOEXEC.
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    ::execv(args[0], args.data());
    const int e = errno;
    ssize_t ignored = ::write(err_pipe[1], &e, sizeof(e));
    (void)ignored;
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(err_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(err_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess(pid));
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    child->Kill();  // reap it
    const std::string what = "spawn: cannot execute " + argv[0] + ": " + std::strerror(child_errno);
    if (child_errno == ENOENT) return NotFoundError(what);
    if (child_errno == EACCES) return PermissionDeniedError(what);
    return InternalError(what);
  }
  return child;
}

ChildProcess::~ChildProcess() { Kill(); }

bool ChildProcess::Poll() {
  if (exit_code_) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  if (r < 0) {
    exit_code_ = -1;  // not our child any more (ECHILD): treat as gone
    return true;
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return true;
}

bool ChildProcess::running() { return !Poll(); }

void ChildProcess::Signal(int signal) {
  if (!Poll()) ::kill(pid_, signal);
}

Status ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Poll()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("process " + std::to_string(pid_) + " still running after " +
                                   std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return OkStatus();
}

void ChildProcess::Kill() {
  if (Poll()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_code_ = r == pid_ ? (WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status)) : -1;
}

std::string ChildProcess::ExitDescription() const {
  if (!exit_code_) return "still running";
  if (*exit_code_ >= 0) return "exit status " + std::to_string(*exit_code_);
  return "killed by signal " + std::to_string(-*exit_code_) + " (" + strsignal(-*exit_code_) + ")";
}

std::string TailFile(const std::string& path, size_t max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(cannot read " + path + ")";
  constexpr std::streamoff kMaxBytes = 64 * 1024;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > kMaxBytes ? size - kMaxBytes : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  size_t lines = 0;
  while (pos > 0) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    if (++lines == max_lines) {
      pos = nl + 1;
      break;
    }
    pos = nl;
  }
  return text.substr(pos);
}

}  // namespace hearsay::launch
