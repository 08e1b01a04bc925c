// Decoder of vLLM KV-cache events: see kv_events_decoder.h.
#include "hearsay/upstream/kv_events_decoder.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <msgpack.hpp>
#include <span>
#include <utility>

namespace hearsay::upstream {
namespace {

using msgpack::object;
namespace mt = msgpack::type;

Status Bad(std::string what) { return DataLossError("kv events: " + std::move(what)); }

bool IsNil(const object& o) { return o.type == mt::NIL; }

std::string_view TypeName(const object& o) {
  switch (o.type) {
    case mt::NIL:
      return "nil";
    case mt::BOOLEAN:
      return "bool";
    case mt::POSITIVE_INTEGER:
    case mt::NEGATIVE_INTEGER:
      return "int";
    case mt::FLOAT32:
    case mt::FLOAT64:
      return "float";
    case mt::STR:
      return "str";
    case mt::BIN:
      return "bin";
    case mt::ARRAY:
      return "array";
    case mt::MAP:
      return "map";
    default:
      return "ext";
  }
}

Status WrongType(std::string_view field, const object& o, std::string_view want) {
  return Bad(std::string(field) + ": expected " + std::string(want) + ", got " +
             std::string(TypeName(o)));
}

std::string_view Str(const object& o) { return {o.via.str.ptr, o.via.str.size}; }

Result<int64_t> Int(std::string_view field, const object& o) {
  if (o.type == mt::NEGATIVE_INTEGER) return o.via.i64;
  if (o.type == mt::POSITIVE_INTEGER) {
    if (o.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Bad(std::string(field) + ": integer out of range");
    }
    return static_cast<int64_t>(o.via.u64);
  }
  return WrongType(field, o, "int");
}

Result<std::optional<int64_t>> OptInt(std::string_view field, const object& o) {
  if (IsNil(o)) return std::optional<int64_t>();
  HEARSAY_ASSIGN_OR_RETURN(int64_t v, Int(field, o));
  return std::optional<int64_t>(v);
}

Result<std::string> OptStr(std::string_view field, const object& o) {
  if (IsNil(o)) return std::string();
  if (o.type != mt::STR) return WrongType(field, o, "str or nil");
  return std::string(Str(o));
}

Result<EngineBlockHash> Hash(std::string_view field, const object& o) {
  EngineBlockHash h;
  if (o.type == mt::POSITIVE_INTEGER || o.type == mt::NEGATIVE_INTEGER) {
    // i64 and u64 share their bits: a signed hash and its unsigned reading are one block.
    const uint64_t v = o.via.u64;
    h.reserve(9);
    h.push_back('i');
    for (int shift = 56; shift >= 0; shift -= 8) h.push_back(static_cast<char>(v >> shift));
    return h;
  }
  if (o.type == mt::BIN || o.type == mt::STR) {
    const char* p = o.type == mt::BIN ? o.via.bin.ptr : o.via.str.ptr;
    const size_t n = o.type == mt::BIN ? o.via.bin.size : o.via.str.size;
    h.reserve(n + 1);
    h.push_back('b');
    h.append(p, n);
    return h;
  }
  return WrongType(field, o, "int or bytes");
}

Result<std::vector<EngineBlockHash>> Hashes(std::string_view field, const object& o) {
  if (o.type != mt::ARRAY) return WrongType(field, o, "array");
  std::vector<EngineBlockHash> out;
  out.reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    HEARSAY_ASSIGN_OR_RETURN(EngineBlockHash h, Hash(field, o.via.array.ptr[i]));
    out.push_back(std::move(h));
  }
  return out;
}

Result<std::vector<uint32_t>> Tokens(const object& o) {
  if (o.type != mt::ARRAY) return WrongType("token_ids", o, "array");
  std::vector<uint32_t> out;
  out.reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    const object& t = o.via.array.ptr[i];
    if (t.type != mt::POSITIVE_INTEGER || t.via.u64 > std::numeric_limits<uint32_t>::max()) {
      return Bad("token_ids: expected token ids in [0, 2^32)");
    }
    out.push_back(static_cast<uint32_t>(t.via.u64));
  }
  return out;
}

// An event's fields by name, whether it came as a tagged array (positional) or a tagged map.
// Absent fields are nullptr.
class Fields {
 public:
  // `names` lists the positional fields after the tag, in vLLM's declaration order.
  static Result<Fields> Of(const object& event, std::span<const std::string_view> names,
                           std::string_view* tag) {
    Fields f;
    f.names_ = names;
    f.values_.assign(names.size(), nullptr);
    if (event.type == mt::ARRAY) {
      if (event.via.array.size == 0) return Bad("event: empty array");
      const object& t = event.via.array.ptr[0];
      if (t.type != mt::STR) return WrongType("event tag", t, "str");
      *tag = Str(t);
      for (uint32_t i = 1; i < event.via.array.size && i - 1 < names.size(); ++i) {
        f.values_[i - 1] = &event.via.array.ptr[i];
      }
      return f;
    }
    if (event.type == mt::MAP) {
      bool tagged = false;
      for (uint32_t i = 0; i < event.via.map.size; ++i) {
        const msgpack::object_kv& kv = event.via.map.ptr[i];
        if (kv.key.type != mt::STR) return WrongType("event key", kv.key, "str");
        const std::string_view key = Str(kv.key);
        if (key == "type") {
          if (kv.val.type != mt::STR) return WrongType("event type", kv.val, "str");
          *tag = Str(kv.val);
          tagged = true;
          continue;
        }
        for (size_t n = 0; n < names.size(); ++n) {
          if (names[n] == key) f.values_[n] = &kv.val;
        }
      }
      if (!tagged) return Bad("event: map without \"type\"");
      return f;
    }
    return WrongType("event", event, "array or map");
  }

  // The field, or nullptr when absent.
  const object* Get(std::string_view name) const {
    for (size_t n = 0; n < names_.size(); ++n) {
      if (names_[n] == name) return values_[n];
    }
    return nullptr;
  }
  // The field, treating nil like absent.
  const object* GetNonNil(std::string_view name) const {
    const object* o = Get(name);
    return o == nullptr || IsNil(*o) ? nullptr : o;
  }

 private:
  std::span<const std::string_view> names_;
  std::vector<const object*> values_;
};

constexpr std::string_view kStoredFields[] = {"block_hashes", "parent_block_hash", "token_ids",
                                              "block_size",   "lora_id",           "medium",
                                              "lora_name",    "extra_keys",        "group_idx"};
constexpr std::string_view kRemovedFields[] = {"block_hashes", "medium", "group_idx"};

Result<KvBlockStored> DecodeStored(const Fields& f) {
  KvBlockStored e;
  const object* hashes = f.Get("block_hashes");
  const object* tokens = f.Get("token_ids");
  const object* size = f.Get("block_size");
  if (hashes == nullptr || tokens == nullptr || size == nullptr ||
      f.Get("parent_block_hash") == nullptr) {
    return Bad(
        "BlockStored: missing a required field (block_hashes, parent_block_hash, "
        "token_ids, block_size)");
  }
  HEARSAY_ASSIGN_OR_RETURN(e.block_hashes, Hashes("block_hashes", *hashes));
  if (const object* p = f.GetNonNil("parent_block_hash")) {
    HEARSAY_ASSIGN_OR_RETURN(EngineBlockHash h, Hash("parent_block_hash", *p));
    e.parent_block_hash = std::move(h);
  }
  HEARSAY_ASSIGN_OR_RETURN(e.token_ids, Tokens(*tokens));
  HEARSAY_ASSIGN_OR_RETURN(int64_t bs, Int("block_size", *size));
  if (bs <= 0) return Bad("BlockStored: block_size must be positive");
  e.block_size = static_cast<uint64_t>(bs);
  // vLLM sends full blocks only: the tokens fill exactly the blocks named.
  if (e.token_ids.size() / e.block_size != e.block_hashes.size() ||
      e.token_ids.size() % e.block_size != 0) {
    return Bad("BlockStored: " + std::to_string(e.token_ids.size()) + " token_ids for " +
               std::to_string(e.block_hashes.size()) + " blocks of " + std::to_string(bs));
  }
  if (const object* o = f.Get("lora_id")) {
    HEARSAY_ASSIGN_OR_RETURN(e.lora_id, OptInt("lora_id", *o));
  }
  if (const object* o = f.Get("medium")) {
    HEARSAY_ASSIGN_OR_RETURN(e.medium, OptStr("medium", *o));
  }
  if (const object* o = f.Get("lora_name")) {
    HEARSAY_ASSIGN_OR_RETURN(e.lora_name, OptStr("lora_name", *o));
  }
  if (const object* o = f.GetNonNil("extra_keys")) {
    if (o->type != mt::ARRAY) return WrongType("extra_keys", *o, "array or nil");
    for (uint32_t i = 0; i < o->via.array.size; ++i) {
      if (!IsNil(o->via.array.ptr[i])) e.has_extra_keys = true;
    }
  }
  if (const object* o = f.Get("group_idx")) {
    HEARSAY_ASSIGN_OR_RETURN(e.group_idx, OptInt("group_idx", *o));
  }
  return e;
}

Result<KvBlockRemoved> DecodeRemoved(const Fields& f) {
  KvBlockRemoved e;
  const object* hashes = f.Get("block_hashes");
  if (hashes == nullptr) return Bad("BlockRemoved: missing block_hashes");
  HEARSAY_ASSIGN_OR_RETURN(e.block_hashes, Hashes("block_hashes", *hashes));
  if (const object* o = f.Get("medium")) {
    HEARSAY_ASSIGN_OR_RETURN(e.medium, OptStr("medium", *o));
  }
  if (const object* o = f.Get("group_idx")) {
    HEARSAY_ASSIGN_OR_RETURN(e.group_idx, OptInt("group_idx", *o));
  }
  return e;
}

// Appends the decoded event, or counts an unknown type.
Status DecodeEvent(const object& o, KvEventBatch& batch) {
  std::string_view tag;
  // The field list depends on the tag, which a map may give last: read the tag first.
  HEARSAY_ASSIGN_OR_RETURN(Fields probe, Fields::Of(o, {}, &tag));
  (void)probe;
  if (tag == "BlockStored") {
    HEARSAY_ASSIGN_OR_RETURN(Fields f, Fields::Of(o, kStoredFields, &tag));
    HEARSAY_ASSIGN_OR_RETURN(KvBlockStored e, DecodeStored(f));
    batch.events.emplace_back(std::move(e));
  } else if (tag == "BlockRemoved") {
    HEARSAY_ASSIGN_OR_RETURN(Fields f, Fields::Of(o, kRemovedFields, &tag));
    HEARSAY_ASSIGN_OR_RETURN(KvBlockRemoved e, DecodeRemoved(f));
    batch.events.emplace_back(std::move(e));
  } else if (tag == "AllBlocksCleared") {
    batch.events.emplace_back(KvAllBlocksCleared{});
  } else {
    ++batch.unknown_events;
  }
  return OkStatus();
}

Status DecodeBatch(const object& root, KvEventBatch& batch) {
  const object* ts = nullptr;
  const object* events = nullptr;
  const object* rank = nullptr;
  if (root.type == mt::ARRAY) {
    if (root.via.array.size < 2) return Bad("batch: expected [ts, events, dp_rank]");
    ts = &root.via.array.ptr[0];
    events = &root.via.array.ptr[1];
    if (root.via.array.size > 2) rank = &root.via.array.ptr[2];
  } else if (root.type == mt::MAP) {
    for (uint32_t i = 0; i < root.via.map.size; ++i) {
      const msgpack::object_kv& kv = root.via.map.ptr[i];
      if (kv.key.type != mt::STR) return WrongType("batch key", kv.key, "str");
      const std::string_view key = Str(kv.key);
      if (key == "ts") ts = &kv.val;
      if (key == "events") events = &kv.val;
      if (key == "data_parallel_rank") rank = &kv.val;
    }
    if (ts == nullptr || events == nullptr) return Bad("batch: map without ts or events");
  } else {
    return WrongType("batch", root, "array or map");
  }
  if (ts->type == mt::FLOAT64 || ts->type == mt::FLOAT32) {
    batch.ts = ts->via.f64;
  } else if (ts->type == mt::POSITIVE_INTEGER) {
    batch.ts = static_cast<double>(ts->via.u64);
  } else {
    return WrongType("ts", *ts, "float");
  }
  if (events->type != mt::ARRAY) return WrongType("events", *events, "array");
  if (rank != nullptr) {
    HEARSAY_ASSIGN_OR_RETURN(batch.data_parallel_rank, OptInt("data_parallel_rank", *rank));
  }
  batch.events.reserve(events->via.array.size);
  for (uint32_t i = 0; i < events->via.array.size; ++i) {
    if (Status s = DecodeEvent(events->via.array.ptr[i], batch); !s.ok()) {
      return Status(s.code(), s.message() + " (event " + std::to_string(i) + ")");
    }
  }
  return OkStatus();
}

}  // namespace

Result<uint64_t> DecodeKvSeq(std::string_view seq_frame) {
  if (seq_frame.size() != 8) {
    return Bad("sequence frame of " + std::to_string(seq_frame.size()) + " bytes, expected 8");
  }
  uint64_t v = 0;
  for (char c : seq_frame) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

std::string EncodeKvSeq(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, seq >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(seq);
  return out;
}

Result<KvEventBatch> DecodeKvEventBatch(std::string_view seq_frame, std::string_view payload) {
  KvEventBatch batch;
  HEARSAY_ASSIGN_OR_RETURN(batch.seq, DecodeKvSeq(seq_frame));
  if (payload.size() > kMaxKvPayloadBytes) {
    return Bad("payload of " + std::to_string(payload.size()) + " bytes is too large");
  }
  // Every element takes at least one byte: bounding counts by the payload size bounds what the
  // unpacker allocates for a hostile header that claims 2^32 elements.
  const size_t n = std::max<size_t>(payload.size(), 1);
  const msgpack::unpack_limit limit(n, n / 2 + 1, n, n, n, 32);
  try {
    size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(payload.data(), payload.size(), offset, nullptr, nullptr, limit);
    if (offset != payload.size()) {
      return Bad(std::to_string(payload.size() - offset) + " bytes after the batch");
    }
    HEARSAY_RETURN_IF_ERROR(DecodeBatch(handle.get(), batch));
  } catch (const std::exception& e) {
    return Bad(std::string("malformed msgpack: ") + e.what());
  }
  return batch;
}

}  // namespace hearsay::upstream
