// Llama2cWriter: writes a checkpoint in the llama2.c format (karpathy/llama2.c, "version 0")
// with seeded random weights, for tests and demos that need a real Llama-architecture model but
// no trained one. llama.cpp's llama-convert-llama2c-to-ggml turns the file into a GGUF.
//
// Format (little-endian, what the converter reads):
//   header: 7 x int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len.
//           A negative vocab_size means the file carries its own classifier (wcls) after
//           everything else; a positive one means the classifier shares the token embedding.
//   then float32 tensors, in this order:
//     token_embedding (vocab, dim), rms_att (layers, dim), wq (layers, dim, dim),
//     wk (layers, dim, kv_dim), wv (layers, dim, kv_dim), wo (layers, dim, dim),
//     rms_ffn (layers, dim), w1 (layers, hidden, dim), w2 (layers, dim, hidden),
//     w3 (layers, hidden, dim), rms_final (dim), freq_cis_real (seq_len, head/2),
//     freq_cis_imag (seq_len, head/2), [wcls (vocab, dim) when unshared]
//   where head = dim / n_heads and kv_dim = dim * n_kv_heads / n_heads.
// Weights are Normal(0, init_std) (the GPT-2/llama2.c init), RMSNorm gains are 1, and the RoPE
// tables hold the real frequencies (the converter skips them, but the file stays a valid
// llama2.c checkpoint that llama2.c's run.c can execute).
//
// Thread-safety: plain functions over values.
#pragma once

#include <cstdint>
#include <string>

#include "hearsay/common/status.h"

namespace hearsay::tools {

struct Llama2cConfig {
  int32_t dim = 256;
  int32_t hidden_dim = 768;
  int32_t n_layers = 4;
  int32_t n_heads = 8;
  int32_t n_kv_heads = 8;
  // 32000 matches llama.cpp's models/ggml-vocab-llama-spm.gguf, which the converter copies.
  int32_t vocab_size = 32000;
  int32_t seq_len = 2048;
  // True: the classifier shares the token embedding (header vocab_size > 0).
  bool shared_classifier = true;
  uint64_t seed = 1;
  double init_std = 0.02;
};

// INVALID_ARGUMENT naming the first bad field: every size >= 1, dim divisible by n_heads, an even
// head size, n_heads divisible by n_kv_heads, and a file below 4 GiB.
Status ValidateLlama2cConfig(const Llama2cConfig& config);

// The size in bytes of the checkpoint `config` describes (header included).
uint64_t Llama2cFileBytes(const Llama2cConfig& config);

// Writes the checkpoint to `path` (through a temporary file renamed at the end, so a reader
// never sees half a model). Same config, same bytes. Errors: INVALID_ARGUMENT for a bad config,
// UNAVAILABLE when the file cannot be written.
Status WriteLlama2cCheckpoint(const Llama2cConfig& config, const std::string& path);

}  // namespace hearsay::tools
