#include "hearsay/net/keyring_file.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hearsay::net {
namespace {

std::string ErrnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return InternalError(ErrnoText("cannot write", path));
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

Result<gossip::Keyring> ReadKeyFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = ErrnoText("cannot read key file", path);
    return errno == ENOENT ? NotFoundError(why) : PermissionDeniedError(why);
  }
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = ErrnoText("cannot read key file", path);
      ::close(fd);
      sodium_memzero(text.data(), text.size());
      sodium_memzero(chunk, sizeof chunk);
      return PermissionDeniedError(why);
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  sodium_memzero(chunk, sizeof chunk);
  Result<gossip::Keyring> ring = gossip::Keyring::ParseFile(text);
  sodium_memzero(text.data(), text.size());
  if (!ring.ok()) return InvalidArgumentError("key file " + path + ": " + ring.status().message());
  return ring;
}

std::optional<std::string> KeyFileModeWarning(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & 007) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "key file " + path + " can be read by other users (mode " + mode +
         "): anyone who reads it can join the cluster; run chmod 600 " + path;
}

Status WriteKeyringFile(const std::string& path, const gossip::Keyring& keyring) {
  std::string text =
      "# hearsay keyring, written by `hearsay node` (keys changed with `hearsay keys`).\n"
      "# The first key is primary. Do not edit while the node runs.\n" +
      keyring.ToFile();
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    sodium_memzero(text.data(), text.size());
    return InternalError(ErrnoText("cannot create", tmp));
  }
  Status written = WriteAll(fd, text, tmp);
  sodium_memzero(text.data(), text.size());
  if (written.ok() && ::fsync(fd) != 0) written = InternalError(ErrnoText("cannot fsync", tmp));
  if (::close(fd) != 0 && written.ok()) written = InternalError(ErrnoText("cannot close", tmp));
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = InternalError(ErrnoText("cannot rename " + tmp + " to", path));
  }
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  // The rename is durable only once the directory entry is.
  const std::string dir = DirOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return OkStatus();
}

Result<StartupKeyring> LoadStartupKeyring(const std::string& cluster_key_file,
                                          const std::string& keyring_file) {
  if (!keyring_file.empty() && Exists(keyring_file)) {
    HEARSAY_ASSIGN_OR_RETURN(gossip::Keyring ring, ReadKeyFile(keyring_file));
    return StartupKeyring{std::move(ring), "keyring file " + keyring_file};
  }
  if (cluster_key_file.empty()) {
    return FailedPreconditionError(
        keyring_file.empty()
            ? "no cluster key: give --cluster-key-file (create one with `hearsay keygen`)"
            : "keyring file " + keyring_file +
                  " does not exist and no --cluster-key-file is given to seed it");
  }
  HEARSAY_ASSIGN_OR_RETURN(gossip::Keyring ring, ReadKeyFile(cluster_key_file));
  if (!keyring_file.empty()) {
    HEARSAY_RETURN_IF_ERROR(WriteKeyringFile(keyring_file, ring));
    return StartupKeyring{
        std::move(ring), "cluster key file " + cluster_key_file + " (seeded " + keyring_file + ")"};
  }
  return StartupKeyring{std::move(ring), "cluster key file " + cluster_key_file};
}

}  // namespace hearsay::net
