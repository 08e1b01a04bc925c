// The hearsay command: one binary, one subcommand per job.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef HEARSAY_MIMALLOC
#include <mimalloc.h>
#endif

#include "hearsay/cli/commands.h"

namespace {

// Which allocator malloc really is: mimalloc only if a block from malloc's family lies in its heap
// (the override works by link order, so this checks it rather than trusting the build).
std::string AllocatorName() {
#ifdef HEARSAY_MIMALLOC
  void* p = std::calloc(1, 64);  // calloc: g++ warns of passing malloc's uninitialized bytes
  const bool mimalloc = mi_is_in_heap_region(p);
  std::free(p);
  if (mimalloc) {
    const int v = mi_version();
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
           std::to_string(v % 10);
  }
#endif
  return "system malloc";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hearsay: decentralized, prefix-cache-aware routing for P2P LLM serving"};
  app.require_subcommand(1);
  int exit_code = 0;
  app.add_subcommand("version", "Print the version")->callback([] {
    std::printf("hearsay 0.1.0 (allocator: %s)\n", AllocatorName().c_str());
  });
  hearsay::cli::AddKeygenCommand(app, exit_code);
  hearsay::cli::AddCaCommand(app, exit_code);
  hearsay::cli::AddApiKeyCommand(app, exit_code);
  hearsay::cli::AddKeysCommand(app, exit_code);
  hearsay::cli::AddNodeCommand(app, exit_code);
  hearsay::cli::AddSimCommand(app, exit_code);
  hearsay::cli::AddDemoCommand(app, exit_code);
  hearsay::cli::AddBenchCommand(app, exit_code);
  hearsay::cli::AddStatusCommand(app, exit_code);
  hearsay::cli::AddCalibrateCommand(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
