// `hearsay ca init --dir D` and `hearsay ca issue --dir D --node-id ID`: a cluster's own
// certificate authority for TLS and mutual TLS (docs/security.md#tls).
//
// init writes D/ca.crt and D/ca.key; issue writes D/ID.crt and D/ID.key, signed by D's CA. Key
// files are created mode 0600, and nothing is ever overwritten (exit 1 naming the file).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hearsay/cli/commands.h"
#include "hearsay/http/certificates.h"

namespace hearsay::cli {
namespace {

constexpr int64_t kDay = 86400;

// Creates `path` (never replacing a file) with `mode` and writes `text`.
Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return UnavailableError("cannot create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return UnavailableError("cannot write " + path + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // the umask may have taken bits away; never adds any beyond `mode`
  ::close(fd);
  return OkStatus();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Both files of a pair, the key 0600. Neither may exist yet: checked first, so a refusal writes
// nothing.
Status WritePair(const std::string& stem, const http::PemPair& pair) {
  for (const std::string& path : {stem + ".crt", stem + ".key"}) {
    if (::access(path.c_str(), F_OK) == 0) {
      return AlreadyExistsError(path + " exists; remove it first to replace it");
    }
  }
  HEARSAY_RETURN_IF_ERROR(WriteNewFile(stem + ".key", pair.key, 0600));
  return WriteNewFile(stem + ".crt", pair.cert, 0644);
}

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "hearsay ca %s: %s\n", what, s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

struct IssueFlags {
  std::string dir = ".";
  std::string node_id;
  int64_t days = 365;
  std::vector<std::string> dns;
  std::vector<std::string> ips;
};

int RunInit(const std::string& dir, const std::string& name, int64_t days) {
  ::mkdir(dir.c_str(), 0700);
  Result<http::PemPair> ca = http::MakeCertificateAuthority(name, {0, days * kDay});
  if (!ca.ok()) return Fail("init", ca.status());
  if (Status s = WritePair(dir + "/ca", *ca); !s.ok()) return Fail("init", s);
  std::printf("wrote %s/ca.crt and %s/ca.key (mode 0600; keep it offline)\n", dir.c_str(),
              dir.c_str());
  return 0;
}

int RunIssue(const IssueFlags& f) {
  if (!http::ValidCertificateNodeId(f.node_id) || f.node_id.find('/') != std::string::npos) {
    return Fail("issue", InvalidArgumentError("--node-id: 1..128 printable bytes without spaces, "
                                              "commas or slashes"));
  }
  Result<std::string> cert = ReadFile(f.dir + "/ca.crt");
  if (!cert.ok()) return Fail("issue", cert.status());
  Result<std::string> key = ReadFile(f.dir + "/ca.key");
  if (!key.ok()) return Fail("issue", key.status());
  http::NodeCertificateRequest req;
  req.node_id = f.node_id;
  req.dns_names = f.dns;
  req.ip_addresses = f.ips;
  req.validity = {0, f.days * kDay};
  Result<http::PemPair> pair = http::IssueNodeCertificate({*cert, *key}, req);
  if (!pair.ok()) return Fail("issue", pair.status());
  const std::string stem = f.dir + "/" + f.node_id;
  if (Status s = WritePair(stem, *pair); !s.ok()) return Fail("issue", s);
  std::printf("wrote %s.crt and %s.key (mode 0600) for node %s\n", stem.c_str(), stem.c_str(),
              f.node_id.c_str());
  return 0;
}

}  // namespace

void AddCaCommand(CLI::App& app, int& exit_code) {
  auto* ca = app.add_subcommand(
      "ca", "A cluster certificate authority for TLS and mutual TLS between nodes");
  ca->require_subcommand(1);

  auto* init = ca->add_subcommand("init", "Make a CA: DIR/ca.crt and DIR/ca.key (mode 0600)");
  auto init_dir = std::make_shared<std::string>();
  auto init_name = std::make_shared<std::string>("hearsay cluster CA");
  auto init_days = std::make_shared<int64_t>(3650);
  init->add_option("--dir", *init_dir, "folder of the CA (made 0700 if missing)")->required();
  init->add_option("--name", *init_name, "the CA's subject name")->capture_default_str();
  init->add_option("--days", *init_days, "days the CA certificate is valid")
      ->check(CLI::Range(int64_t{1}, int64_t{36500}))
      ->capture_default_str();
  init->callback([&exit_code, init_dir, init_name, init_days] {
    exit_code = RunInit(*init_dir, *init_name, *init_days);
  });

  auto* issue = ca->add_subcommand(
      "issue", "Issue a node certificate signed by the CA: DIR/ID.crt and DIR/ID.key (mode 0600)");
  auto f = std::make_shared<IssueFlags>();
  issue->add_option("--dir", f->dir, "folder of the CA (hearsay ca init)")->required();
  issue->add_option("--node-id", f->node_id, "the node's id (its --node-id)")->required();
  issue->add_option("--days", f->days, "days the certificate is valid")
      ->check(CLI::Range(int64_t{1}, int64_t{3650}))
      ->capture_default_str();
  issue->add_option("--dns", f->dns, "a DNS name clients reach the node by (repeatable)");
  issue->add_option("--ip", f->ips, "an IP address clients reach the node by (repeatable)");
  issue->callback([&exit_code, f] { exit_code = RunIssue(*f); });
}

}  // namespace hearsay::cli
