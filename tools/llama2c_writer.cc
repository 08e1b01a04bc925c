// Llama2cWriter: see llama2c_writer.h.
#include "tools/llama2c_writer.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::tools {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Streams floats to a file in fixed-size chunks, remembering the first write error.
class FloatSink {
 public:
  explicit FloatSink(std::FILE* f) : f_(f) { buf_.reserve(kChunk); }

  void Put(float v) {
    buf_.push_back(v);
    if (buf_.size() == kChunk) Flush();
  }
  bool Flush() {
    if (!buf_.empty() && ok_) {
      ok_ = std::fwrite(buf_.data(), sizeof(float), buf_.size(), f_) == buf_.size();
    }
    buf_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kChunk = 1 << 16;
  std::FILE* f_;
  std::vector<float> buf_;
  bool ok_ = true;
};

uint64_t TensorFloats(const Llama2cConfig& c) {
  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const uint64_t kv_dim = dim * c.n_kv_heads / c.n_heads;
  const uint64_t head = dim / c.n_heads;
  uint64_t n = vocab * dim;                              // token embedding
  n += 2 * layers * dim;                                 // rms_att, rms_ffn
  n += 2 * layers * dim * dim;                           // wq, wo
  n += 2 * layers * dim * kv_dim;                        // wk, wv
  n += 3 * layers * hidden * dim;                        // w1, w2, w3
  n += dim;                                              // rms_final
  n += 2 * static_cast<uint64_t>(c.seq_len) * head / 2;  // freq_cis real, imag
  if (!c.shared_classifier) n += vocab * dim;
  return n;
}

}  // namespace

Status ValidateLlama2cConfig(const Llama2cConfig& c) {
  if (c.dim < 1) return InvalidArgumentError("dim must be >= 1");
  if (c.hidden_dim < 1) return InvalidArgumentError("hidden_dim must be >= 1");
  if (c.n_layers < 1) return InvalidArgumentError("n_layers must be >= 1");
  if (c.n_heads < 1) return InvalidArgumentError("n_heads must be >= 1");
  if (c.n_kv_heads < 1 || c.n_kv_heads > c.n_heads) {
    return InvalidArgumentError("n_kv_heads must be in [1, n_heads]");
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return InvalidArgumentError("n_heads must be a multiple of n_kv_heads");
  }
  if (c.vocab_size < 1) return InvalidArgumentError("vocab_size must be >= 1");
  if (c.seq_len < 1) return InvalidArgumentError("seq_len must be >= 1");
  if (c.dim % c.n_heads != 0) return InvalidArgumentError("dim must be a multiple of n_heads");
  if ((c.dim / c.n_heads) % 2 != 0) {
    return InvalidArgumentError("head size (dim / n_heads) must be even (RoPE pairs)");
  }
  if (!(c.init_std > 0 && c.init_std < 10)) {
    return InvalidArgumentError("init_std must be in (0, 10)");
  }
  // The converter indexes with int; stay well clear of its overflow and of silly sizes.
  if (Llama2cFileBytes(c) >= (uint64_t{1} << 32)) {
    return InvalidArgumentError("model too large: the checkpoint would exceed 4 GiB");
  }
  return OkStatus();
}

uint64_t Llama2cFileBytes(const Llama2cConfig& c) {
  return 7 * sizeof(int32_t) + TensorFloats(c) * sizeof(float);
}

Status WriteLlama2cCheckpoint(const Llama2cConfig& c, const std::string& path) {
  if (Status s = ValidateLlama2cConfig(c); !s.ok()) return s;
  const std::string tmp = path + ".tmp";
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return UnavailableError("cannot open " + tmp + " for writing");

  const int32_t header[7] = {c.dim,        c.hidden_dim,
                             c.n_layers,   c.n_heads,
                             c.n_kv_heads, c.shared_classifier ? c.vocab_size : -c.vocab_size,
                             c.seq_len};
  auto fail = [&](std::string what) {
    f.reset();
    std::remove(tmp.c_str());
    return UnavailableError(what + ": " + tmp);
  };
  if (std::fwrite(header, sizeof(header), 1, f.get()) != 1) return fail("write failed");

  Rng rng(c.seed);
  FloatSink out(f.get());
  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const uint64_t kv_dim = dim * c.n_kv_heads / c.n_heads;
  const uint64_t head = dim / c.n_heads;
  auto random = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) out.Put(static_cast<float>(rng.Normal(0, c.init_std)));
  };
  auto ones = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) out.Put(1.0f);
  };

  random(vocab * dim);                    // token_embedding
  ones(layers * dim);                     // rms_att
  random(layers * dim * dim);             // wq
  random(layers * dim * kv_dim);          // wk
  random(layers * dim * kv_dim);          // wv
  random(layers * dim * dim);             // wo
  ones(layers * dim);                     // rms_ffn
  random(layers * hidden * dim);          // w1
  random(layers * dim * hidden);          // w2
  random(layers * hidden * dim);          // w3
  ones(dim);                              // rms_final
  for (int part = 0; part < 2; ++part) {  // freq_cis_real, then freq_cis_imag
    for (int32_t pos = 0; pos < c.seq_len; ++pos) {
      for (uint64_t i = 0; i < head / 2; ++i) {
        const double freq = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(i) / head);
        const double angle = pos * freq;
        out.Put(static_cast<float>(part == 0 ? std::cos(angle) : std::sin(angle)));
      }
    }
  }
  if (!c.shared_classifier) random(vocab * dim);  // wcls

  if (!out.Flush() || std::fflush(f.get()) != 0) return fail("write failed");
  f.reset();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("cannot rename " + tmp + " to " + path);
  }
  return OkStatus();
}

}  // namespace hearsay::tools
