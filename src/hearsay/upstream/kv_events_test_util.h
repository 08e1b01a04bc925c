// Test helpers: vLLM KV-event payloads encoded the way vLLM's msgspec encoder writes them
// (smallest integer forms, float64 timestamps, fixstr/str8 strings, bin for bytes hashes), in the
// array form (array_like structs, vLLM up to the versions Dynamo decodes) and the map form
// (tagged maps, newer vLLM).
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hearsay::upstream::testing {

// A block hash as vLLM sends it: an integer, or bytes.
using WireHash = std::variant<int64_t, std::string>;

struct WireStored {
  WireStored(std::vector<WireHash> h, std::optional<WireHash> p, std::vector<uint32_t> t,
             uint32_t bs, std::optional<int64_t> lora = std::nullopt,
             std::optional<std::string> med = std::string("GPU"))
      : hashes(std::move(h)),
        parent(std::move(p)),
        tokens(std::move(t)),
        block_size(bs),
        lora_id(lora),
        medium(std::move(med)) {}
  std::vector<WireHash> hashes;
  std::optional<WireHash> parent;
  std::vector<uint32_t> tokens;
  uint32_t block_size = 16;
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium = std::string("GPU");
};
struct WireRemoved {
  explicit WireRemoved(std::vector<WireHash> h) : hashes(std::move(h)) {}
  std::vector<WireHash> hashes;
  std::optional<std::string> medium = std::string("GPU");
};
struct WireCleared {};
using WireEvent = std::variant<WireStored, WireRemoved, WireCleared>;

enum class WireForm { kArray, kMap };

class WireWriter {
 public:
  explicit WireWriter(WireForm form) : form_(form), pk_(buf_) {}

  std::string Batch(double ts, const std::vector<WireEvent>& events,
                    std::optional<int64_t> dp_rank = 0) {
    if (form_ == WireForm::kArray) {
      pk_.pack_array(dp_rank ? 3 : 2);  // omit_defaults drops a trailing None rank
      pk_.pack_double(ts);
      Events(events);
      if (dp_rank) pk_.pack_int64(*dp_rank);
    } else {
      pk_.pack_map(dp_rank ? 3 : 2);
      Str("ts");
      pk_.pack_double(ts);
      Str("events");
      Events(events);
      if (dp_rank) {
        Str("data_parallel_rank");
        pk_.pack_int64(*dp_rank);
      }
    }
    return {buf_.data(), buf_.size()};
  }

 private:
  void Str(const std::string& s) {
    pk_.pack_str(static_cast<uint32_t>(s.size()));
    pk_.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
  }
  void OptStr(const std::optional<std::string>& s) {
    if (s) {
      Str(*s);
    } else {
      pk_.pack_nil();
    }
  }
  void Hash(const WireHash& h) {
    if (const auto* i = std::get_if<int64_t>(&h)) {
      pk_.pack_int64(*i);
    } else {
      const std::string& b = std::get<std::string>(h);
      pk_.pack_bin(static_cast<uint32_t>(b.size()));
      pk_.pack_bin_body(b.data(), static_cast<uint32_t>(b.size()));
    }
  }
  void Hashes(const std::vector<WireHash>& hs) {
    pk_.pack_array(static_cast<uint32_t>(hs.size()));
    for (const WireHash& h : hs) Hash(h);
  }
  void Events(const std::vector<WireEvent>& events) {
    pk_.pack_array(static_cast<uint32_t>(events.size()));
    for (const WireEvent& e : events) {
      if (const auto* s = std::get_if<WireStored>(&e)) {
        Stored(*s);
      } else if (const auto* r = std::get_if<WireRemoved>(&e)) {
        Removed(*r);
      } else {
        if (form_ == WireForm::kArray) {
          pk_.pack_array(1);
        } else {
          pk_.pack_map(1);
          Str("type");
        }
        Str("AllBlocksCleared");
      }
    }
  }
  void Stored(const WireStored& s) {
    if (form_ == WireForm::kArray) {
      pk_.pack_array(7);
      Str("BlockStored");
    } else {
      pk_.pack_map(7);
      Str("type");
      Str("BlockStored");
      Str("block_hashes");
    }
    Hashes(s.hashes);
    if (form_ == WireForm::kMap) Str("parent_block_hash");
    if (s.parent) {
      Hash(*s.parent);
    } else {
      pk_.pack_nil();
    }
    if (form_ == WireForm::kMap) Str("token_ids");
    pk_.pack_array(static_cast<uint32_t>(s.tokens.size()));
    for (uint32_t t : s.tokens) pk_.pack_uint32(t);
    if (form_ == WireForm::kMap) Str("block_size");
    pk_.pack_uint32(s.block_size);
    if (form_ == WireForm::kMap) Str("lora_id");
    if (s.lora_id) {
      pk_.pack_int64(*s.lora_id);
    } else {
      pk_.pack_nil();
    }
    if (form_ == WireForm::kMap) Str("medium");
    OptStr(s.medium);
  }
  void Removed(const WireRemoved& r) {
    if (form_ == WireForm::kArray) {
      pk_.pack_array(3);
      Str("BlockRemoved");
    } else {
      pk_.pack_map(3);
      Str("type");
      Str("BlockRemoved");
      Str("block_hashes");
    }
    Hashes(r.hashes);
    if (form_ == WireForm::kMap) Str("medium");
    OptStr(r.medium);
  }

  WireForm form_;
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> pk_;
};

// A payload in the given form.
inline std::string EncodeBatch(WireForm form, double ts, const std::vector<WireEvent>& events,
                               std::optional<int64_t> dp_rank = 0) {
  return WireWriter(form).Batch(ts, events, dp_rank);
}

// `count` consecutive token ids from `first`.
inline std::vector<uint32_t> TokenRun(uint32_t first, size_t count) {
  std::vector<uint32_t> t(count);
  for (size_t i = 0; i < count; ++i) t[i] = first + static_cast<uint32_t>(i);
  return t;
}

}  // namespace hearsay::upstream::testing
