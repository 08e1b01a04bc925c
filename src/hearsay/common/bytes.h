// ByteWriter and ByteReader: the building blocks of every wire format in hearsay.
//
// Fixed-width integers are little-endian; Varint is LEB128 (at most 10 bytes for 64 bits).
// ByteReader is for untrusted input. Every read is bounds-checked, and the first failure makes
// the reader sticky-failed: later reads return zero values and ok() stays false, so a decoder can
// read a whole structure and check once at the end. Counts are checked against the bytes left
// before anything is allocated (ReadCount), so a hostile length cannot make a decoder allocate.
//
// Thread-safety: none; plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay {

class ByteWriter {
 public:
  void PutU8(uint8_t v) { out_.push_back(v); }
  void PutU16(uint16_t v) { PutFixed(v, 2); }
  void PutU32(uint32_t v) { PutFixed(v, 4); }
  void PutU64(uint64_t v) { PutFixed(v, 8); }
  void PutVarint(uint64_t v);
  // Zig-zag encoded signed varint.
  void PutSignedVarint(int64_t v) {
    PutVarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void PutDouble(double v);
  // Raw bytes, no length prefix.
  void PutRaw(std::span<const uint8_t> bytes) {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  // Varint length, then the bytes.
  void PutBytes(std::span<const uint8_t> bytes) {
    PutVarint(bytes.size());
    PutRaw(bytes);
  }
  void PutString(std::string_view s) {
    PutBytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  }

  size_t size() const { return out_.size(); }
  const std::vector<uint8_t>& bytes() const { return out_; }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  void PutFixed(uint64_t v, int width) {
    uint8_t buf[8];
    for (int i = 0; i < width; ++i) buf[i] = static_cast<uint8_t>(v >> (8 * i));
    out_.insert(out_.end(), buf, buf + width);
  }

  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  uint8_t ReadU8() { return static_cast<uint8_t>(ReadFixed(1)); }
  uint16_t ReadU16() { return static_cast<uint16_t>(ReadFixed(2)); }
  uint32_t ReadU32() { return static_cast<uint32_t>(ReadFixed(4)); }
  uint64_t ReadU64() { return ReadFixed(8); }
  uint64_t ReadVarint();
  int64_t ReadSignedVarint() {
    const uint64_t v = ReadVarint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  double ReadDouble();
  // Exactly n raw bytes (a view into the input).
  std::span<const uint8_t> ReadRaw(size_t n);
  // A varint length (at most max_len), then that many bytes.
  std::span<const uint8_t> ReadBytes(size_t max_len);
  std::string ReadString(size_t max_len);
  // A varint element count, at most max_count, and small enough that count * min_item_bytes
  // fits in what is left. Use it before reserving or looping.
  size_t ReadCount(size_t max_count, size_t min_item_bytes);

  // Marks the reader failed with `why` (for a decoder's own semantic checks).
  void Fail(std::string why);

  bool ok() const { return error_.empty(); }
  size_t remaining() const { return ok() ? in_.size() - pos_ : 0; }
  bool AtEnd() const { return ok() && pos_ == in_.size(); }
  // OK, or DATA_LOSS naming the first failure and its offset.
  Status status() const;
  // Like status(), but also fails if bytes are left over.
  Status Finish() const;

 private:
  uint64_t ReadFixed(int width);

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace hearsay
