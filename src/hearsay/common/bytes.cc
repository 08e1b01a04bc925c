#include "hearsay/common/bytes.h"

#include <cstring>

namespace hearsay {

void ByteWriter::PutDouble(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutU64(bits);
}

void ByteReader::Fail(std::string why) {
  if (!ok()) return;
  error_ = std::move(why) + " at byte " + std::to_string(pos_);
}

Status ByteReader::status() const { return ok() ? OkStatus() : DataLossError(error_); }

Status ByteReader::Finish() const {
  if (!ok()) return status();
  if (pos_ != in_.size()) {
    return DataLossError(std::to_string(in_.size() - pos_) + " trailing bytes at byte " +
                         std::to_string(pos_));
  }
  return OkStatus();
}

uint64_t ByteReader::ReadFixed(int width) {
  if (!ok()) return 0;
  if (in_.size() - pos_ < static_cast<size_t>(width)) {
    Fail("truncated: need " + std::to_string(width) + " bytes");
    return 0;
  }
  uint64_t v = 0;
  const uint8_t* p = in_.data() + pos_;
  if (width == 8) {
    // Eight byte loads and shifts fold into one load (the compiler recognises the pattern only
    // for a constant width).
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  } else {
    for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  pos_ += width;
  return v;
}

uint64_t ByteReader::ReadVarintSlow() {
  if (!ok()) return 0;
  if (in_.size() - pos_ >= 10) {
    // Fast path: the terminator is within the first 9 bytes (no bound or overflow check needed
    // there); a 10-byte varint falls through to the checked loop below.
    const uint8_t* p = in_.data() + pos_;
    uint64_t v = 0;
    for (int i = 0; i < 9; ++i) {
      v |= static_cast<uint64_t>(p[i] & 0x7f) << (7 * i);
      if (p[i] < 0x80) {
        pos_ += static_cast<size_t>(i) + 1;
        return v;
      }
    }
  }
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= in_.size()) {
      Fail("truncated varint");
      return 0;
    }
    const uint8_t b = in_[pos_++];
    if (shift == 63 && b > 1) {
      Fail("varint overflows 64 bits");
      return 0;
    }
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  Fail("varint longer than 10 bytes");
  return 0;
}

double ByteReader::ReadDouble() {
  const uint64_t bits = ReadU64();
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::span<const uint8_t> ByteReader::ReadRaw(size_t n) {
  if (!ok()) return {};
  if (in_.size() - pos_ < n) {
    Fail("truncated: need " + std::to_string(n) + " bytes");
    return {};
  }
  auto out = in_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::span<const uint8_t> ByteReader::ReadBytes(size_t max_len) {
  const uint64_t len = ReadVarint();
  if (!ok()) return {};
  if (len > max_len) {
    Fail("length " + std::to_string(len) + " over limit " + std::to_string(max_len));
    return {};
  }
  return ReadRaw(static_cast<size_t>(len));
}

std::string ByteReader::ReadString(size_t max_len) {
  auto bytes = ReadBytes(max_len);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

size_t ByteReader::ReadCount(size_t max_count, size_t min_item_bytes) {
  const uint64_t count = ReadVarint();
  if (!ok()) return 0;
  if (count > max_count) {
    Fail("count " + std::to_string(count) + " over limit " + std::to_string(max_count));
    return 0;
  }
  if (min_item_bytes > 0 && count > remaining() / min_item_bytes) {
    Fail("count " + std::to_string(count) + " does not fit in " + std::to_string(remaining()) +
         " bytes");
    return 0;
  }
  return static_cast<size_t>(count);
}

}  // namespace hearsay
