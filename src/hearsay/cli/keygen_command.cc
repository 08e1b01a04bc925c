// `hearsay keygen`: prints a new random cluster key in the format --cluster-key-file reads.
#include <sodium.h>

#include <array>
#include <cstdio>

#include "hearsay/cli/commands.h"
#include "hearsay/gossip/keyring.h"

namespace hearsay::cli {

void AddKeygenCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("keygen", "Print a new random cluster key (base64, 32 bytes)");
  cmd->callback([&exit_code] {
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
    std::printf("%s\n", key->ToBase64().c_str());
  });
}

}  // namespace hearsay::cli
