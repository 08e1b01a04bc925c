// `hearsay apikey create`: makes an API key for a tenant, appends its line (the key's hash, never
// the key) to the API-keys file, and prints the key once (net/api_keys.h, docs/security.md).
#include <fcntl.h>
#include <sodium.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "hearsay/cli/commands.h"
#include "hearsay/net/api_keys.h"

namespace hearsay::cli {

namespace {

struct CreateFlags {
  std::string tenant;
  std::string file;
  uint64_t rps = 0;
  uint64_t tpm = 0;
  bool shared_cache = false;
};

// Appends under an exclusive lock, after checking that the file with the new line still parses
// (so a second key of a tenant must agree with its limits).
int Create(const CreateFlags& f) {
  if (sodium_init() < 0) {
    std::fprintf(stderr, "hearsay apikey: libsodium failed to initialise\n");
    return 1;
  }
  const int fd = ::open(f.file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "hearsay apikey: cannot open %s\n", f.file.c_str());
    return 1;
  }
  ::flock(fd, LOCK_EX);
  std::string text;
  {
    std::ifstream in(f.file, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const bool needs_newline = !text.empty() && text.back() != '\n';
  if (needs_newline) text.push_back('\n');
  std::array<uint8_t, 38> random{};
  randombytes_buf(random.data(), random.size());
  net::Tenant tenant{f.tenant, {f.rps, f.tpm}, f.shared_cache};
  Result<net::NewApiKey> key = net::MakeApiKey(tenant, random);
  sodium_memzero(random.data(), random.size());
  if (!key.ok()) {
    std::fprintf(stderr, "hearsay apikey: %s\n", key.status().message().c_str());
    ::close(fd);
    return 2;
  }
  if (Result<net::ApiKeys> check = net::ApiKeys::Parse(text + key->line); !check.ok()) {
    std::fprintf(stderr, "hearsay apikey: %s (nothing written)\n",
                 check.status().message().c_str());
    ::close(fd);
    return 2;
  }
  const std::string out = needs_newline ? "\n" + key->line : key->line;
  const bool ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size());
  ::close(fd);
  if (!ok) {
    std::fprintf(stderr, "hearsay apikey: cannot write %s\n", f.file.c_str());
    return 1;
  }
  std::fprintf(stderr, "added key %s for tenant %s to %s; the key is shown only now:\n",
               key->id.c_str(), f.tenant.c_str(), f.file.c_str());
  std::printf("%s\n", key->key.c_str());
  return 0;
}

}  // namespace

void AddApiKeyCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("apikey", "Manage the API-keys file (--api-keys-file)");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<CreateFlags>();
  auto* create = cmd->add_subcommand(
      "create", "Add a key for a tenant to the file and print the key (shown only once)");
  create->add_option("--tenant", flags->tenant, "tenant name, 1-64 of [A-Za-z0-9._-]")->required();
  create->add_option("--file", flags->file, "the API-keys file (created if missing)")->required();
  create->add_option("--rps", flags->rps, "the tenant's requests per second (0: no limit)");
  create->add_option("--tpm", flags->tpm,
                     "the tenant's tokens per minute, prompt plus max_tokens (0: no limit)");
  create->add_flag("--shared-cache", flags->shared_cache,
                   "the tenant's requests use the shared cache namespace (public prefixes)");
  create->callback([flags, &exit_code] { exit_code = Create(*flags); });
}

}  // namespace hearsay::cli
