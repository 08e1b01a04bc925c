#include "hearsay/net/api_key_store.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>

namespace hearsay::net {

ApiKeyStore::Stamp ApiKeyStore::StampNow() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return Stamp{};
  return Stamp{int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec,
               static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
}

Result<ApiKeys> ApiKeyStore::Read(Stamp* stamp) const {
  *stamp = StampNow();
  std::ifstream in(path_, std::ios::binary);
  if (!in) return NotFoundError("api keys file " + path_ + ": cannot be read");
  // One byte past the limit is enough to tell a file that is too large.
  std::string text;
  text.resize(ApiKeys::kMaxFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  Result<ApiKeys> keys = ApiKeys::Parse(text);
  if (!keys.ok()) {
    return Status(keys.status().code(), path_ + ": " + keys.status().message());
  }
  return keys;
}

Result<std::unique_ptr<ApiKeyStore>> ApiKeyStore::Open(std::string path) {
  std::unique_ptr<ApiKeyStore> store(new ApiKeyStore(std::move(path)));
  Stamp stamp;
  HEARSAY_ASSIGN_OR_RETURN(ApiKeys keys, store->Read(&stamp));
  store->current_ = std::make_shared<const ApiKeys>(std::move(keys));
  store->stamp_ = stamp;
  return store;
}

ApiKeyStore::ReloadResult ApiKeyStore::Reload(bool force) {
  ReloadResult r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.entries = current_->entries().size();
    if (!force && StampNow() == stamp_) return r;
  }
  Stamp stamp;
  Result<ApiKeys> keys = Read(&stamp);
  std::lock_guard<std::mutex> lock(mu_);
  // A failed read is not retried until the file changes again (or SIGHUP): one log line per
  // change, not one per poll.
  stamp_ = stamp;
  if (!keys.ok()) {
    r.outcome = ReloadOutcome::kFailed;
    r.status = keys.status();
    return r;
  }
  current_ = std::make_shared<const ApiKeys>(std::move(keys).value());
  r.outcome = ReloadOutcome::kReloaded;
  r.entries = current_->entries().size();
  return r;
}

std::shared_ptr<const ApiKeys> ApiKeyStore::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

}  // namespace hearsay::net
