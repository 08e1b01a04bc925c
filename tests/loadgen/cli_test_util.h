// Helpers for the CLI tests: run `hearsay` as a child process with a private TMPDIR, read its
// output, and find processes that belong to the run through /proc.
//
// Thread-safety: test-body use only (one thread).
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::clitest {

// True in an ASan or TSan build, whose timing says nothing about a release node's.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define HEARSAY_CLITEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define HEARSAY_CLITEST_SANITIZED 1
#endif
#ifdef HEARSAY_CLITEST_SANITIZED
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// The whole file, or "" if it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The pids of live (non-zombie) processes whose command line mentions `needle`.
inline std::vector<int> ProcessesMentioning(const std::string& needle) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* e = ::readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::string cmdline = ReadFile(base + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(needle) == std::string::npos) continue;
    // "pid (comm) S ...": skip zombies, which are already dead and only wait to be reaped.
    const std::string stat = ReadFile(base + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') continue;
    pids.push_back(pid);
  }
  ::closedir(proc);
  return pids;
}

using testutil::Eventually;

// A `hearsay` invocation whose TMPDIR (hence the LocalCluster temp dirs and key files of a demo)
// is a private directory, so its node processes can be told apart from other tests' by their
// command line (--cluster-key-file <tmpdir>/...).
class HearsayRun {
 public:
  explicit HearsayRun(std::vector<std::string> args) {
    auto dir = launch::TempDir::Create("hearsay-cli-test-");
    if (!dir.ok()) return;
    dir_ = std::move(*dir);
    tmpdir_ = dir_->File("tmp");
    ::mkdir(tmpdir_.c_str(), 0700);
    log_ = dir_->File("out.log");
    args.insert(args.begin(), HEARSAY_BINARY);
    // The child inherits the environment; set TMPDIR only around the spawn.
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    ::setenv("TMPDIR", tmpdir_.c_str(), 1);
    auto child = launch::ChildProcess::Spawn(args, log_);
    if (old) {
      ::setenv("TMPDIR", saved.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    if (child.ok()) child_ = std::move(*child);
  }

  bool started() const { return child_ != nullptr; }
  launch::ChildProcess& process() { return *child_; }
  const std::string& tmpdir() const { return tmpdir_; }
  // stdout and stderr of the run so far.
  std::string output() const { return ReadFile(log_); }
  // The nodes (or anything else) started with a path under this run's TMPDIR.
  std::vector<int> Children() const { return ProcessesMentioning(tmpdir_ + "/"); }

 private:
  std::unique_ptr<launch::TempDir> dir_;
  std::string tmpdir_;
  std::string log_;
  std::unique_ptr<launch::ChildProcess> child_;
};

// The JSON document at the end of `output`: from the first line that starts with `open`.
inline std::string JsonTail(const std::string& output, char open) {
  size_t pos = 0;
  while (pos < output.size()) {
    if (output[pos] == open) return output.substr(pos);
    pos = output.find('\n', pos);
    if (pos == std::string::npos) break;
    ++pos;
  }
  return "";
}

}  // namespace hearsay::clitest
