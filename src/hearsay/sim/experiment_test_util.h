// Helpers for the experiment tests: a file's whole text, and a fresh output folder.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hearsay::sim::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An empty (removed) folder under the test's temporary directory, named `prefix` + `name`.
inline std::string FreshDir(const std::string& prefix, const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + prefix + name;
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace hearsay::sim::testing
