#include "hearsay/net/daemon_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace hearsay::net {
namespace {

DaemonConfig Insecure() {
  DaemonConfig c;
  c.insecure = true;
  return c;
}

TEST(DaemonConfigTest, DefaultsAreDocumentedValues) {
  DaemonConfig c;
  EXPECT_EQ(c.http_listen, "127.0.0.1:8080");
  EXPECT_EQ(c.gossip_listen, "127.0.0.1:7946");
  EXPECT_EQ(c.policy, "hearsay");
  EXPECT_EQ(c.engine, "sim");
  EXPECT_EQ(c.engine_preset, "h100-llama3-8b");
  EXPECT_EQ(c.model, "hearsay-sim");
  EXPECT_EQ(c.block_size, 16u);
  EXPECT_EQ(c.api_address(), "127.0.0.1:8080");
  // Without a key or --insecure the defaults do not start.
  Status s = c.Validate();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("hearsay keygen"), std::string::npos);
  EXPECT_TRUE(Insecure().Validate().ok()) << Insecure().Validate().ToString();
}

TEST(DaemonConfigTest, TomlSetsEveryKind) {
  DaemonConfig c;
  Status s = c.ApplyToml(R"(
[http]
listen = "0.0.0.0:9000"
advertise = "10.0.0.5:9000"
[gossip]
listen = "0.0.0.0:7000"
join = ["10.0.0.1:7000", "10.0.0.2:7000"]
[node]
id = "gpu-7"
policy = "least-loaded"
block_size = 32
[engine]
capacity_tokens = 100000
[security]
insecure = true
[limits]
max_body_bytes = 2048
max_concurrent_requests = 3
)",
                         "node.toml");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.http_listen, "0.0.0.0:9000");
  EXPECT_EQ(c.api_address(), "10.0.0.5:9000");
  EXPECT_EQ(c.join, (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"}));
  EXPECT_EQ(c.node_id, "gpu-7");
  EXPECT_EQ(c.policy, "least-loaded");
  EXPECT_EQ(c.block_size, 32u);
  EXPECT_EQ(c.capacity_tokens, 100000u);
  EXPECT_TRUE(c.insecure);
  EXPECT_EQ(c.max_body_bytes, 2048u);
  EXPECT_EQ(c.max_concurrent_requests, 3u);
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
}

TEST(DaemonConfigTest, TomlErrorsNameTheKey) {
  struct Case {
    const char* toml;
    const char* needle;
  };
  for (const Case& k : {
           Case{"[http]\nlisten = 5\n", "'http.listen': expected a string"},
           Case{"[http]\nlsten = \"a:1\"\n", "'http.lsten': unknown key"},
           Case{"[htp]\nlisten = \"a:1\"\n", "'htp': unknown key"},
           Case{"top = 1\n", "'top': unknown key"},
           Case{"[limits]\nmax_body_bytes = -1\n", "'limits.max_body_bytes': must not be negative"},
           Case{"[limits]\nmax_body_bytes = 0\n", "'limits.max_body_bytes': 0 is out of range"},
           Case{"[runtime]\nio_threads = \"2\"\n", "'runtime.io_threads': expected an integer"},
           Case{"[security]\ninsecure = \"yes\"\n", "'security.insecure': expected true or false"},
           Case{"[gossip]\njoin = [1]\n", "'gossip.join': expected strings"},
           Case{"[http\n", "cfg.toml:1:"},
       }) {
    DaemonConfig c;
    Status s = c.ApplyToml(k.toml, "cfg.toml");
    ASSERT_FALSE(s.ok()) << k.toml;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(k.needle), std::string::npos) << s.message();
    // A failed file changes nothing.
    EXPECT_EQ(c.http_listen, "127.0.0.1:8080");
  }
}

TEST(DaemonConfigTest, FlagsOverrideTheFile) {
  const std::string path = ::testing::TempDir() + "/hearsay_daemon_config_test.toml";
  {
    std::ofstream f(path);
    f << "[http]\nlisten = \"127.0.0.1:1111\"\n[limits]\nmax_tokens = 100\n";
  }
  DaemonConfig c;
  ASSERT_TRUE(c.LoadTomlFile(path).ok());
  std::remove(path.c_str());
  ASSERT_TRUE(c.ApplyFlag("http", "127.0.0.1:2222").ok());
  ASSERT_TRUE(c.ApplyFlag("join", "a:1, b:2,,").ok());
  ASSERT_TRUE(c.ApplyFlag("insecure", "true").ok());
  ASSERT_TRUE(c.ApplyFlag("debug-faults", "").ok());
  EXPECT_EQ(c.upstream_first_token_timeout_ms, 30000u);
  ASSERT_TRUE(c.ApplyFlag("upstream-first-token-timeout-ms", "90000").ok());
  EXPECT_EQ(c.upstream_first_token_timeout_ms, 90000u);
  EXPECT_EQ(c.http_listen, "127.0.0.1:2222");
  EXPECT_EQ(c.max_tokens, 100u);  // from the file
  EXPECT_EQ(c.join, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_TRUE(c.insecure);
  EXPECT_TRUE(c.debug_faults);
  EXPECT_EQ(c.LoadTomlFile("/nonexistent/x.toml").code(), StatusCode::kNotFound);
}

TEST(DaemonConfigTest, FlagErrorsNameTheFlag) {
  DaemonConfig c;
  Status s = c.ApplyFlag("max-body-bytes", "12k");
  EXPECT_NE(s.message().find("--max-body-bytes: expected a non-negative integer"),
            std::string::npos);
  s = c.ApplyFlag("io-threads", "100");
  EXPECT_NE(s.message().find("--io-threads: 100 is out of range"), std::string::npos);
  s = c.ApplyFlag("insecure", "maybe");
  EXPECT_FALSE(s.ok());
  s = c.ApplyFlag("no-such-flag", "1");
  EXPECT_NE(s.message().find("unknown flag"), std::string::npos);
}

TEST(DaemonConfigTest, ValidateChecksValues) {
  struct Case {
    const char* flag;
    const char* value;
    const char* needle;
  };
  for (const Case& k : {
           Case{"http", "nohost", "http.listen"},
           Case{"join", "a:0", "gossip.join: port 0"},
           Case{"policy", "oracle", "only in the simulator"},
           Case{"policy", "best", "unknown policy 'best'"},
           Case{"engine", "vllm", "engine.kind: unknown engine"},
           Case{"engine-preset", "tpu", "engine.preset"},
           Case{"capacity-tokens", "100", "engine.capacity_tokens"},
           Case{"max-tokens", "8192", "limits.max_tokens"},
           Case{"log-level", "loud", "runtime.log_level"},
           Case{"cluster-key-file", "/k", "not both"},
           Case{"advertise-http", "[::1]", "http.advertise"},
       }) {
    DaemonConfig c = Insecure();
    ASSERT_TRUE(c.ApplyFlag(k.flag, k.value).ok()) << k.flag;
    Status s = c.Validate();
    ASSERT_FALSE(s.ok()) << k.flag << "=" << k.value;
    EXPECT_NE(s.message().find(k.needle), std::string::npos) << s.message();
  }
}

TEST(DaemonConfigTest, EveryTomlKeyHasAFlagAndDescribeListsThem) {
  DaemonConfig c;
  const std::string d = c.Describe(/*all=*/true);
  for (const SettingInfo& s : Settings()) {
    EXPECT_FALSE(s.flag.empty());
    EXPECT_FALSE(s.help.empty());
    EXPECT_NE(d.find(std::string(s.key) + "="), std::string::npos) << s.key;
  }
  // The startup log lists only what differs from the defaults.
  EXPECT_EQ(c.Describe(), "");
  ASSERT_TRUE(c.ApplyFlag("max-tokens", "77").ok());
  ASSERT_TRUE(c.ApplyFlag("policy", "local").ok());
  EXPECT_EQ(c.Describe(), "node.policy=local limits.max_tokens=77");
  EXPECT_EQ(SettingValue(c, "limits.max_body_bytes"), "1048576");
  EXPECT_EQ(SettingValue(c, "security.insecure"), "false");
  EXPECT_EQ(SettingValue(c, "limits.max_connections"), "1024");
  EXPECT_EQ(SettingValue(c, "limits.max_json_members"), "10000");
}

// The settings table of docs/operations.md has a row for every setting, with its TOML key and
// its flag.
TEST(DaemonConfigTest, EverySettingIsInTheDocumentedTable) {
  const char* root = std::getenv("HEARSAY_SOURCE_DIR");
  ASSERT_NE(root, nullptr) << "HEARSAY_SOURCE_DIR is set by ctest";
  std::ifstream in(std::string(root) + "/docs/operations.md");
  ASSERT_TRUE(in.good());
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const SettingInfo& s : Settings()) {
    const std::string row = "| `" + std::string(s.key) + "` | `--" + std::string(s.flag) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << "no row " << row;
  }
}

TEST(DaemonConfigTest, ModelNamesAndAliasesAreCheckedPrintableAndBounded) {
  DaemonConfig c;
  c.insecure = true;
  ASSERT_TRUE(c.ApplyFlag("model-aliases", "llama3,meta-llama/Llama-3.1-8B").ok());
  EXPECT_EQ(c.model_aliases, (std::vector<std::string>{"llama3", "meta-llama/Llama-3.1-8B"}));
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  c.model_aliases = {"two words"};
  EXPECT_NE(c.Validate().message().find("node.model_aliases"), std::string::npos);
  c.model_aliases = std::vector<std::string>(17, "a");
  EXPECT_NE(c.Validate().message().find("at most 16"), std::string::npos);
  c.model_aliases.clear();
  c.model = std::string(257, 'm');
  EXPECT_NE(c.Validate().message().find("node.model"), std::string::npos);
  c.model = "Qwen/Qwen2.5-7B-Instruct";
  EXPECT_TRUE(c.Validate().ok());
  c.model = "tab\tthere";
  EXPECT_FALSE(c.Validate().ok());
}

TEST(DaemonConfigTest, TheHostGroupIsCheckedPrintableAndBounded) {
  DaemonConfig c;
  c.insecure = true;
  ASSERT_TRUE(c.ApplyFlag("host-group", "rack 3 / box 1").ok());
  EXPECT_EQ(c.host_group, "rack 3 / box 1");
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  c.host_group = std::string(65, 'h');
  EXPECT_NE(c.Validate().message().find("node.host_group"), std::string::npos);
  c.host_group = "tab\tthere";
  EXPECT_NE(c.Validate().message().find("node.host_group"), std::string::npos);
}

TEST(DaemonConfigTest, HardeningLimitsAreCheckedTogether) {
  DaemonConfig c;
  c.insecure = true;
  c.max_connections = 10;
  c.max_connections_per_client = 11;
  EXPECT_NE(c.Validate().message().find("max_connections_per_client"), std::string::npos);
  c.max_connections_per_client = 10;
  c.gossip_inbound_frame_bytes = 1024;
  EXPECT_NE(c.Validate().message().find("inbound_frame_pool_bytes"), std::string::npos);
  c.gossip_inbound_frame_bytes = 0;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  ASSERT_TRUE(c.ApplyFlag("max-json-members", "20").ok());
  EXPECT_EQ(c.max_json_members, 20u);
}

TEST(DaemonConfigTest, TlsFilesComeTogether) {
  DaemonConfig c;
  c.insecure = true;
  ASSERT_TRUE(
      c.ApplyToml("[tls]\ncert = \"n.crt\"\nkey = \"n.key\"\nca = \"ca.crt\"\n", "t.toml").ok());
  EXPECT_EQ(c.tls_cert, "n.crt");
  EXPECT_EQ(c.tls_key, "n.key");
  EXPECT_EQ(c.tls_ca, "ca.crt");
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  c.tls_key.clear();
  EXPECT_NE(c.Validate().message().find("tls.cert and tls.key go together"), std::string::npos);
  c.tls_cert.clear();
  EXPECT_NE(c.Validate().message().find("tls.ca needs tls.cert"), std::string::npos);
  c.tls_ca.clear();
  EXPECT_TRUE(c.Validate().ok());
}

}  // namespace
}  // namespace hearsay::net
