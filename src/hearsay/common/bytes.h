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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay {

class ByteWriter {
 public:
  // Starts with room for a typical message, so small bodies never reallocate.
  ByteWriter() : out_(kInitialCapacity) {}

  void PutU8(uint8_t v) {
    Reserve(1);
    out_[len_++] = v;
  }
  void PutU16(uint16_t v) { PutFixed(v, 2); }
  void PutU32(uint32_t v) { PutFixed(v, 4); }
  void PutU64(uint64_t v) { PutFixed(v, 8); }
  void PutVarint(uint64_t v) {
    Reserve(10);
    uint8_t* p = out_.data() + len_;
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    len_ = static_cast<size_t>(p - out_.data());
  }
  // Zig-zag encoded signed varint.
  void PutSignedVarint(int64_t v) {
    PutVarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void PutDouble(double v);
  // Raw bytes, no length prefix.
  void PutRaw(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;
    Reserve(bytes.size());
    std::memcpy(out_.data() + len_, bytes.data(), bytes.size());
    len_ += bytes.size();
  }
  // Varint length, then the bytes.
  void PutBytes(std::span<const uint8_t> bytes) {
    PutVarint(bytes.size());
    PutRaw(bytes);
  }
  void PutString(std::string_view s) {
    PutBytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  }

  size_t size() const { return len_; }
  std::span<const uint8_t> bytes() const { return {out_.data(), len_}; }
  // The bytes written; the writer is left empty.
  std::vector<uint8_t> Take() {
    out_.resize(len_);
    len_ = 0;
    return std::move(out_);
  }

 private:
  // Makes room for n more bytes. out_ is a buffer whose first len_ bytes are written, so the
  // hot Put* calls write through a pointer instead of a push_back (and its check) per byte.
  void Reserve(size_t n) {
    if (out_.size() - len_ < n) out_.resize(std::max(2 * out_.size(), len_ + n));
  }
  void PutFixed(uint64_t v, int width) {
    Reserve(8);
    for (int i = 0; i < width; ++i) out_[len_ + i] = static_cast<uint8_t>(v >> (8 * i));
    len_ += static_cast<size_t>(width);
  }

  static constexpr size_t kInitialCapacity = 256;
  // Invariant: len_ <= out_.size(); bytes at and after len_ are scratch.
  std::vector<uint8_t> out_;
  size_t len_ = 0;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  uint8_t ReadU8() { return static_cast<uint8_t>(ReadFixed(1)); }
  uint16_t ReadU16() { return static_cast<uint16_t>(ReadFixed(2)); }
  uint32_t ReadU32() { return static_cast<uint32_t>(ReadFixed(4)); }
  uint64_t ReadU64() {
    // Inline for the common case of 8 bytes available (keys, doubles); the rest out of line.
    if (in_.size() - pos_ >= 8 && ok()) {
      const uint8_t* p = in_.data() + pos_;
      uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
      pos_ += 8;
      return v;
    }
    return ReadFixed(8);
  }
  uint64_t ReadVarint() {
    // Inline for the common one-byte case; everything else (and every check) is out of line.
    if (pos_ < in_.size() && in_[pos_] < 0x80 && ok()) return in_[pos_++];
    return ReadVarintSlow();
  }
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
  uint64_t ReadVarintSlow();
  uint64_t ReadFixed(int width);

  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace hearsay
