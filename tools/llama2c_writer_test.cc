// Tests of the llama2.c checkpoint writer: exact layout, determinism, config validation.
#include "tools/llama2c_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hearsay::tools {
namespace {

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Llama2cWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hearsay_llama2c_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

Llama2cConfig Tiny() {
  Llama2cConfig c;
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = 10;
  c.seq_len = 4;
  return c;
}

TEST_F(Llama2cWriterTest, HeaderAndSizeMatchTheFormat) {
  Llama2cConfig c = Tiny();
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("m.bin")).ok());
  std::vector<char> bytes = ReadAll(Path("m.bin"));
  ASSERT_EQ(bytes.size(), Llama2cFileBytes(c));
  int32_t header[7];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], 8);
  EXPECT_EQ(header[1], 12);
  EXPECT_EQ(header[2], 2);
  EXPECT_EQ(header[3], 2);
  EXPECT_EQ(header[4], 1);
  EXPECT_EQ(header[5], 10);  // shared classifier: positive vocab
  EXPECT_EQ(header[6], 4);
  // Hand count: emb 80, rms 2*16, wq+wo 2*2*64, wk+wv 2*2*8*4, w1..3 3*2*96, final 8,
  // rope 2*4*2.
  const uint64_t floats = 80 + 32 + 256 + 128 + 576 + 8 + 16;
  EXPECT_EQ(bytes.size(), 28 + floats * 4);
}

TEST_F(Llama2cWriterTest, UnsharedClassifierNegatesVocabAndAppendsIt) {
  Llama2cConfig c = Tiny();
  c.shared_classifier = false;
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("m.bin")).ok());
  std::vector<char> bytes = ReadAll(Path("m.bin"));
  int32_t vocab;
  std::memcpy(&vocab, bytes.data() + 5 * 4, 4);
  EXPECT_EQ(vocab, -10);
  Llama2cConfig shared = Tiny();
  EXPECT_EQ(bytes.size(), Llama2cFileBytes(shared) + 10 * 8 * 4);
}

TEST_F(Llama2cWriterTest, SameSeedSameBytesOtherSeedOtherWeights) {
  Llama2cConfig c = Tiny();
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("a.bin")).ok());
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("b.bin")).ok());
  c.seed = 2;
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("c.bin")).ok());
  EXPECT_EQ(ReadAll(Path("a.bin")), ReadAll(Path("b.bin")));
  EXPECT_NE(ReadAll(Path("a.bin")), ReadAll(Path("c.bin")));
}

TEST_F(Llama2cWriterTest, WeightsAreSmallNormsAreOneRopeStartsAtOne) {
  Llama2cConfig c = Tiny();
  ASSERT_TRUE(WriteLlama2cCheckpoint(c, Path("m.bin")).ok());
  std::vector<char> bytes = ReadAll(Path("m.bin"));
  std::vector<float> f((bytes.size() - 28) / 4);
  std::memcpy(f.data(), bytes.data() + 28, f.size() * 4);
  double sum_sq = 0;
  for (int i = 0; i < 80; ++i) sum_sq += f[i] * f[i];
  const double std_dev = std::sqrt(sum_sq / 80);
  EXPECT_GT(std_dev, 0.01);
  EXPECT_LT(std_dev, 0.04);
  for (int i = 80; i < 96; ++i) EXPECT_EQ(f[i], 1.0f) << i;  // rms_att
  // freq_cis_real at position 0 is cos(0) = 1; it starts after rms_final.
  const size_t rope = 80 + 16 + 128 + 64 + 64 + 128 + 16 + 576 + 8;
  EXPECT_EQ(f[rope], 1.0f);
  EXPECT_EQ(f[rope + 8], 0.0f);  // freq_cis_imag at position 0 is sin(0) = 0
}

TEST_F(Llama2cWriterTest, BadConfigsAreRejectedAndWriteNothing) {
  auto expect_bad = [&](Llama2cConfig c, const char* what) {
    Status s = WriteLlama2cCheckpoint(c, Path("bad.bin"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_FALSE(std::filesystem::exists(Path("bad.bin"))) << what;
  };
  Llama2cConfig c = Tiny();
  c.dim = 0;
  expect_bad(c, "dim 0");
  c = Tiny();
  c.n_heads = 3;
  expect_bad(c, "dim not a multiple of heads");
  c = Tiny();
  c.n_kv_heads = 3;
  expect_bad(c, "kv heads above heads");
  c = Tiny();
  c.dim = 6;
  c.n_heads = 2;  // head size 3: odd
  expect_bad(c, "odd head size");
  c = Tiny();
  c.vocab_size = -5;
  expect_bad(c, "negative vocab");
  c = Tiny();
  c.dim = 65536;
  c.vocab_size = 32000;
  expect_bad(c, "over 4 GiB");
}

TEST_F(Llama2cWriterTest, UnwritablePathIsAnError) {
  Status s = WriteLlama2cCheckpoint(Tiny(), Path("no/such/dir/m.bin"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hearsay::tools
