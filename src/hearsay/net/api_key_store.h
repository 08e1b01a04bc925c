// ApiKeyStore: the API-keys file (api_keys.h) as a node holds it: loaded at start, reloaded on
// SIGHUP and when the file changes (the daemon polls Reload(false) from a timer: a change of the
// file's modification time, size or inode reloads it), and read by every request.
//
// A reload that fails (unreadable, too large, invalid) keeps the previous table and reports the
// error; requests never see a half-read file.
//
// Thread-safety: every method may be called from any thread. Current() hands out an immutable
// snapshot, so a request keeps the table it started with across a reload.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/net/api_keys.h"

namespace hearsay::net {

class ApiKeyStore {
 public:
  // Loads `path`. NOT_FOUND if it cannot be read; INVALID_ARGUMENT if it is not a valid file.
  [[nodiscard]] static Result<std::unique_ptr<ApiKeyStore>> Open(std::string path);

  enum class ReloadOutcome { kUnchanged, kReloaded, kFailed };
  struct ReloadResult {
    ReloadOutcome outcome = ReloadOutcome::kUnchanged;
    Status status;       // the error when kFailed
    size_t entries = 0;  // keys in the table in use afterwards
  };
  // Reads the file again if it changed since the last read, or always with `force`.
  ReloadResult Reload(bool force);

  // The table in use.
  std::shared_ptr<const ApiKeys> Current() const;
  const std::string& path() const { return path_; }

 private:
  struct Stamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    uint64_t inode = 0;
    bool operator==(const Stamp&) const = default;
  };
  explicit ApiKeyStore(std::string path) : path_(std::move(path)) {}
  // Reads and parses the file; its stamp as read.
  Result<ApiKeys> Read(Stamp* stamp) const;
  Stamp StampNow() const;

  const std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const ApiKeys> current_;  // guarded by mu_
  Stamp stamp_;                             // guarded by mu_
};

}  // namespace hearsay::net
