// TempDir: a fresh private directory (mkdtemp under $TMPDIR or /tmp) removed with everything in it
// when the object dies, unless Keep() was called (to leave logs for a post-mortem).
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <memory>
#include <string>

#include "hearsay/common/status.h"

namespace hearsay::launch {

class TempDir {
 public:
  // Creates "<tmp>/<prefix>XXXXXX" with mode 0700.
  static Result<std::unique_ptr<TempDir>> Create(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Leave the directory in place when this object dies.
  void Keep() { keep_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool keep_ = false;
};

}  // namespace hearsay::launch
