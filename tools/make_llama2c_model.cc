// make_llama2c_model: writes a llama2.c checkpoint with seeded random weights (see
// llama2c_writer.h). scripts/setup-llama.sh runs it and converts the result to GGUF.
//
//   make_llama2c_model --out model.bin [--dim 256 --hidden-dim 768 --layers 4 --heads 8
//                      --kv-heads 8 --vocab 32000 --seq-len 2048 --seed 1 --unshared-classifier]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tools/llama2c_writer.h"

int main(int argc, char** argv) {
  hearsay::tools::Llama2cConfig config;
  std::string out;
  bool unshared = false;
  CLI::App app{"Writes a llama2.c checkpoint with seeded random weights"};
  app.add_option("--out", out, "output file")->required();
  app.add_option("--dim", config.dim, "transformer width")->capture_default_str();
  app.add_option("--hidden-dim", config.hidden_dim, "FFN width")->capture_default_str();
  app.add_option("--layers", config.n_layers, "layers")->capture_default_str();
  app.add_option("--heads", config.n_heads, "query heads")->capture_default_str();
  app.add_option("--kv-heads", config.n_kv_heads, "key/value heads")->capture_default_str();
  app.add_option("--vocab", config.vocab_size, "vocabulary size (32000: llama spm vocab)")
      ->capture_default_str();
  app.add_option("--seq-len", config.seq_len, "max sequence length")->capture_default_str();
  app.add_option("--seed", config.seed, "weight seed")->capture_default_str();
  app.add_option("--init-std", config.init_std, "weight standard deviation")->capture_default_str();
  app.add_flag("--unshared-classifier", unshared, "write a separate classifier matrix");
  CLI11_PARSE(app, argc, argv);
  config.shared_classifier = !unshared;

  if (hearsay::Status s = hearsay::tools::WriteLlama2cCheckpoint(config, out); !s.ok()) {
    std::fprintf(stderr, "make_llama2c_model: %s\n", s.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "make_llama2c_model: wrote %s (%.1f MB)\n", out.c_str(),
               hearsay::tools::Llama2cFileBytes(config) / 1e6);
  return 0;
}
