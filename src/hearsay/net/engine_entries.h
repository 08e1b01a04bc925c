// The `[[engine]]` entries of a node's TOML (DaemonConfig::engines): how they are read and checked.
// Internal to daemon_config.cc; DaemonConfig::EngineConfig applies one.
//
// Thread-safety: pure functions.
#pragma once

#include <toml++/toml.h>

#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/net/daemon_config.h"

namespace hearsay::net {

// Reads the entries of `[[engine]]` into c.engines. INVALID_ARGUMENT naming the entry and key for
// an entry that is not a table, an unknown key, or a value of the wrong type or range.
Status ApplyEngineEntries(DaemonConfig& c, const toml::array& entries, std::string_view source);

// Checks the entries of `c` (OK without entries): at most gossip::kMaxServiceEngines, each with a
// model and (kind openai) an upstream and a valid configuration of its own, no two claiming one
// model name with different settings, and nothing set at the top level that every entry would
// then share (an upstream, KV events) or that several engines cannot have yet (tokenizer engine).
Status ValidateEngineEntries(const DaemonConfig& c);

}  // namespace hearsay::net
