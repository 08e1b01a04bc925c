// The hearsay command: one binary, one subcommand per job.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "hearsay/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"hearsay: decentralized, prefix-cache-aware routing for P2P LLM serving"};
  app.require_subcommand(1);
  int exit_code = 0;
  app.add_subcommand("version", "Print the version")->callback([] { std::puts("hearsay 0.1.0"); });
  hearsay::cli::AddKeygenCommand(app, exit_code);
  hearsay::cli::AddKeysCommand(app, exit_code);
  hearsay::cli::AddNodeCommand(app, exit_code);
  hearsay::cli::AddSimCommand(app, exit_code);
  hearsay::cli::AddDemoCommand(app, exit_code);
  hearsay::cli::AddBenchCommand(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
