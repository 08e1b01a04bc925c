// Key files on disk: reading the operator's --cluster-key-file, and keeping the node's keyring
// file (--keyring-file) so that keys installed, used or removed at runtime survive a restart.
//
// Both files have the format of gossip::Keyring::ParseFile: one base64 key per line, the first
// line the primary key, '#' comments and blank lines ignored. The keyring file is this node's
// state, like Serf's keyring file: the daemon writes it, the operator seeds it (or lets the
// daemon seed it from --cluster-key-file on the first start) and does not edit it while the node
// runs.
//
// Thread-safety: free functions over files; the caller serialises writes to one path.
#pragma once

#include <optional>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/gossip/keyring.h"

namespace hearsay::net {

// Reads and parses a key file. NOT_FOUND if it does not exist, PERMISSION_DENIED if it cannot
// be opened or read otherwise, both with the OS's reason; INVALID_ARGUMENT naming the path and
// the line for a malformed file.
Result<gossip::Keyring> ReadKeyFile(const std::string& path);

// A warning when users other than the file's owner and group can read, write or run the file
// at `path` (any of its mode's "other" bits: 0644, 0604, ...), naming the mode and the fix;
// nullopt otherwise (0600, or root:hearsay 0640 for a service group), or when it cannot be
// stat'ed.
std::optional<std::string> KeyFileModeWarning(const std::string& path);

// Replaces `path` with `keyring` (primary first), atomically: a temporary file beside it (mode
// 0600) is written and fsynced, renamed over `path`, and the directory is fsynced. A crash leaves
// the old file or the new one, never a mix. INTERNAL naming the step and errno on failure; the
// old file is then untouched.
Status WriteKeyringFile(const std::string& path, const gossip::Keyring& keyring);

// The keyring a node starts with, and where it came from (for the start log).
struct StartupKeyring {
  gossip::Keyring keyring;
  std::string source;
};

// Chooses the start keyring: the keyring file when it is given and exists (it holds what was
// installed at runtime; the cluster key file is then only its first seed); otherwise the cluster
// key file, which then also seeds a given but missing keyring file. FAILED_PRECONDITION if
// neither file is given, or only a keyring file that does not exist; the errors of ReadKeyFile
// and WriteKeyringFile otherwise.
Result<StartupKeyring> LoadStartupKeyring(const std::string& cluster_key_file,
                                          const std::string& keyring_file);

}  // namespace hearsay::net
