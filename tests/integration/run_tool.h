// Running an outside tool from an integration test (Node.js, curl, `hearsay ca`): find it in
// $PATH, and run it to completion, bounded, with its output in a log file.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "hearsay/launch/child_process.h"

namespace hearsay::integration {

// `name` resolved through $PATH, or "" if it is not there.
inline std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `argv` to completion (bounded), returning its exit code; the output goes to `log`.
inline int RunToEnd(const std::vector<std::string>& argv, const std::string& log,
                    std::chrono::milliseconds timeout) {
  auto child = launch::ChildProcess::Spawn(argv, log);
  if (!child.ok()) {
    ADD_FAILURE() << child.status().ToString();
    return -1;
  }
  Status waited = (*child)->Wait(timeout);
  if (!waited.ok()) {
    ADD_FAILURE() << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": " << waited.ToString()
                  << "\n"
                  << launch::TailFile(log, 40);
    (*child)->Kill();
    return -1;
  }
  return (*child)->exit_code().value_or(-1);
}

}  // namespace hearsay::integration
