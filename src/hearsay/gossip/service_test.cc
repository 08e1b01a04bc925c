#include "hearsay/gossip/service.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {
namespace {

Service TwoEngines() {
  return Service{{{"vllm", "llama-3-8b", {"llama3"}, 8192, {"sql-lora"}, 0xabcdef, 16},
                  {"sglang", "qwen-2-7b", {}, 32768, {}, 0x1234, 64}}};
}

// A deltas message carrying `service` as its one record (bypassing the encoder's caller checks).
std::vector<uint8_t> MessageWith(const Service& service) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.generation = 1;
  d.from_version = 0;
  d.to_version = 1;
  d.service = ServiceRecord{1, service};
  m.deltas = {d};
  return Encode(m);
}

TEST(ServiceTest, RoundTripsInADelta) {
  const std::vector<uint8_t> bytes = MessageWith(TwoEngines());
  Result<Message> back = Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->deltas[0].service.has_value());
  EXPECT_EQ(back->deltas[0].service->service, TwoEngines());
  EXPECT_EQ(EncodedDeltaHeaderSize(back->deltas[0]),
            EncodedDeltaHeaderSize(Decode(bytes)->deltas[0]));
  Service grouped = TwoEngines();
  grouped.host_group = "rack-3/box-1";
  back = Decode(MessageWith(grouped));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->deltas[0].service->service, grouped);
  // A group and no engines: a single-model node that shares its host.
  back = Decode(MessageWith(Service{.engines = {}, .host_group = "box"}));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->deltas[0].service->service.host_group, "box");
}

TEST(ServiceTest, SizeHelperMatchesTheEncoding) {
  ServiceRecord rec{300, TwoEngines()};
  ByteWriter w;
  PutServiceRecord(w, rec);
  EXPECT_EQ(w.size(), EncodedSize(rec));
  rec.service.host_group = "box";
  ByteWriter grouped;
  PutServiceRecord(grouped, rec);
  EXPECT_EQ(grouped.size(), EncodedSize(rec));
}

TEST(ServiceTest, FindsModelsByNameAndAlias) {
  const Service s = TwoEngines();
  ASSERT_NE(FindModel(s, "llama3"), nullptr);
  EXPECT_EQ(FindModel(s, "llama3")->model, "llama-3-8b");
  EXPECT_EQ(FindModel(s, "qwen-2-7b")->model, "qwen-2-7b");
  EXPECT_EQ(FindModel(s, "sql-lora"), nullptr);  // an adapter is not a model
  EXPECT_TRUE(ServesModel(s, "llama-3-8b", ""));
  EXPECT_TRUE(ServesModel(s, "llama-3-8b", "sql-lora"));
  EXPECT_FALSE(ServesModel(s, "qwen-2-7b", "sql-lora"));
  EXPECT_FALSE(ServesModel(s, "llama3", ""));  // canonical names only
}

// Each case breaks one limit: ValidateService refuses it, and so does the decoder when a peer
// sends it anyway.
TEST(ServiceTest, OverBoundRecordsAreRefusedOnDecode) {
  struct Case {
    const char* what;
    Service service;
  };
  std::vector<Case> cases;
  auto one = [](auto edit) {
    Service s = TwoEngines();
    edit(s.engines[0]);
    return s;
  };
  {
    Service s;
    s.engines.assign(kMaxServiceEngines + 1, TwoEngines().engines[1]);
    cases.push_back({"too many engines", s});
  }
  cases.push_back({"too many aliases",
                   one([](EngineService& e) { e.aliases.assign(kMaxServiceAliases + 1, "a"); })});
  cases.push_back({"too many adapters",
                   one([](EngineService& e) { e.adapters.assign(kMaxServiceAdapters + 1, "l"); })});
  cases.push_back({"long model name",
                   one([](EngineService& e) { e.model.assign(kMaxServiceNameBytes + 1, 'm'); })});
  cases.push_back(
      {"long kind", one([](EngineService& e) { e.kind.assign(kMaxServiceKindBytes + 1, 'k'); })});
  cases.push_back({"empty model name", one([](EngineService& e) { e.model.clear(); })});
  cases.push_back({"control byte", one([](EngineService& e) { e.model = "llama\n3"; })});
  cases.push_back({"non-ASCII byte", one([](EngineService& e) { e.aliases = {"mod\xc3\xa9le"}; })});
  cases.push_back({"empty adapter", one([](EngineService& e) { e.adapters = {""}; })});
  {
    Service s = TwoEngines();
    s.host_group.assign(kMaxHostGroupBytes + 1, 'h');
    cases.push_back({"long host group", s});
    s.host_group = "box\t1";
    cases.push_back({"control byte in the host group", s});
  }
  {
    // Every count within its limit, the whole above kMaxServiceBytes.
    Service s;
    EngineService e = TwoEngines().engines[0];
    e.adapters.assign(kMaxServiceAdapters, std::string(40, 'x'));
    s.engines.assign(kMaxServiceEngines, e);
    cases.push_back({"total size", s});
  }
  for (const Case& c : cases) {
    EXPECT_FALSE(ValidateService(c.service).ok()) << c.what;
    Result<Message> back = Decode(MessageWith(c.service));
    EXPECT_FALSE(back.ok()) << c.what;
    if (!back.ok()) {
      EXPECT_EQ(back.status().code(), StatusCode::kDataLoss) << c.what;
    }
  }
  // At the limits exactly: accepted.
  Service full;
  EngineService e = TwoEngines().engines[0];
  e.model.assign(kMaxServiceNameBytes, 'm');
  e.aliases.assign(kMaxServiceAliases, "alias");
  e.adapters.assign(kMaxServiceAdapters, "adapter");
  full.engines.assign(kMaxServiceEngines, e);
  full.host_group.assign(kMaxHostGroupBytes, 'h');
  EXPECT_TRUE(ValidateService(full).ok());
  EXPECT_TRUE(Decode(MessageWith(full)).ok());
}

TEST(ServiceTest, RejectsAServiceVersionOutsideTheDelta) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.from_version = 5;
  d.to_version = 8;
  for (uint64_t v : {0, 5, 9}) {
    d.service = ServiceRecord{v, TwoEngines()};
    m.deltas = {d};
    EXPECT_FALSE(Decode(Encode(m)).ok()) << v;
  }
  d.service = ServiceRecord{8, TwoEngines()};
  m.deltas = {d};
  EXPECT_TRUE(Decode(Encode(m)).ok());
}

TEST(ServiceTest, SummaryNamesEachEngine) {
  EXPECT_EQ(ServiceSummary(TwoEngines()),
            "vllm:llama-3-8b(+1 aliases, 1 adapters), sglang:qwen-2-7b");
  EXPECT_EQ(ServiceSummary(Service{}), "");
  Service grouped = TwoEngines();
  grouped.engines.pop_back();
  grouped.host_group = "box";
  EXPECT_EQ(ServiceSummary(grouped), "vllm:llama-3-8b(+1 aliases, 1 adapters) on host group box");
}

// A fuzz seed at the limits (fuzz/corpus/message_fuzz/service_limits.bin), so the fuzzer starts
// next to every bound. HEARSAY_WRITE_MESSAGE_CORPUS=1 rewrites it after a wire change.
TEST(ServiceTest, LimitsSeedDecodes) {
  const char* root = std::getenv("HEARSAY_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "HEARSAY_SOURCE_DIR is not set";
  Service full;
  EngineService e = TwoEngines().engines[0];
  e.model.assign(kMaxServiceNameBytes, '~');
  e.aliases.assign(kMaxServiceAliases, "alias");
  e.adapters.assign(kMaxServiceAdapters, "a");  // every count at its limit, the seed small
  e.kind.assign(kMaxServiceKindBytes, 'k');
  full.engines.assign(1, e);
  full.engines.push_back(TwoEngines().engines[1]);
  full.host_group.assign(kMaxHostGroupBytes, 'h');
  ASSERT_TRUE(ValidateService(full).ok());
  const std::filesystem::path file =
      std::filesystem::path(root) / "fuzz/corpus/message_fuzz/service_limits.bin";
  const std::vector<uint8_t> bytes = MessageWith(full);
  if (std::getenv("HEARSAY_WRITE_MESSAGE_CORPUS") != nullptr) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> seed((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  EXPECT_EQ(seed, bytes);
  Result<Message> back = Decode(seed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->deltas[0].service->service, full);
}

TEST(ServiceTest, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> bytes = MessageWith(TwoEngines());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(Decode(std::span<const uint8_t>(bytes.data(), n)).ok()) << n;
  }
}

}  // namespace
}  // namespace hearsay::gossip
