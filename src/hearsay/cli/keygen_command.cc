// `hearsay keygen`: prints a new random cluster key in the format --cluster-key-file reads.
//
// A key is a secret: `hearsay keygen > cluster.key` leaves the shell's file readable by others
// (umask 022 makes it 0644), so when standard output is a regular file keygen makes it 0600 before
// writing. `--out FILE` creates FILE itself with mode 0600 and refuses to overwrite one.
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "hearsay/cli/commands.h"
#include "hearsay/gossip/keyring.h"

namespace hearsay::cli {
namespace {

// Writes all of `text` to `fd`; false on an error (errno set).
bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void AddKeygenCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "keygen",
      "Print a new random cluster key (base64, 32 bytes). Redirected to a file, the file is made "
      "mode 0600");
  auto out = std::make_shared<std::string>();
  cmd->add_option("--out", *out, "write the key to this new file (mode 0600) instead of stdout");
  cmd->callback([&exit_code, out] {
    if (sodium_init() < 0) {
      std::fprintf(stderr, "hearsay keygen: libsodium failed to initialise\n");
      exit_code = 1;
      return;
    }
    std::array<uint8_t, gossip::kClusterKeyBytes> bytes{};
    randombytes_buf(bytes.data(), bytes.size());
    Result<gossip::ClusterKey> key = gossip::ClusterKey::FromBytes(bytes);
    sodium_memzero(bytes.data(), bytes.size());
    if (!key.ok()) {
      std::fprintf(stderr, "hearsay keygen: %s\n", key.status().ToString().c_str());
      exit_code = 1;
      return;
    }
    std::string text = key->ToBase64() + "\n";
    int fd = STDOUT_FILENO;
    if (!out->empty()) {
      fd = ::open(out->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) {
        std::fprintf(stderr, "hearsay keygen: cannot create %s: %s\n", out->c_str(),
                     std::strerror(errno));
        exit_code = 1;
        return;
      }
    } else if (struct stat st{}; ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                                 (st.st_mode & 077) != 0 && ::fchmod(fd, 0600) != 0) {
      std::fprintf(stderr,
                   "hearsay keygen: warning: cannot make the output file mode 0600 (%s); "
                   "run chmod 600 on it\n",
                   std::strerror(errno));
    }
    const bool written = WriteAll(fd, text);
    const int write_errno = errno;
    sodium_memzero(text.data(), text.size());
    if (fd != STDOUT_FILENO) ::close(fd);
    if (!written) {
      std::fprintf(stderr, "hearsay keygen: cannot write the key: %s\n",
                   std::strerror(write_errno));
      exit_code = 1;
    }
  });
}

}  // namespace hearsay::cli
