// LocalCluster's failure paths, against fake `hearsay` binaries (shell scripts): the real daemon
// is exercised by tests/integration.
#include "hearsay/launch/local_cluster.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "hearsay/launch/temp_dir.h"

namespace hearsay::launch {
namespace {

using namespace std::chrono_literals;

class LocalClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<TempDir>> d = TempDir::Create("hearsay-lc-test-");
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dir_ = std::move(d).value();
  }

  // Writes an executable shell script that plays `hearsay`.
  std::string FakeBinary(const std::string& body) {
    const std::string path = dir_->File("fake-hearsay");
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  LocalClusterOptions Options(const std::string& binary) {
    LocalClusterOptions o;
    o.hearsay_binary = binary;
    o.nodes = 2;
    o.ready_timeout = 1500ms;
    return o;
  }

  std::unique_ptr<TempDir> dir_;
};

constexpr const char* kGoodKeygen =
    "if [ \"$1\" = keygen ]; then echo c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=; exit 0; fi\n";

TEST_F(LocalClusterTest, RejectsAMissingBinaryAndZeroNodes) {
  auto missing = LocalCluster::Start(Options(dir_->File("nope")));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  LocalClusterOptions zero = Options(FakeBinary(kGoodKeygen));
  zero.nodes = 0;
  EXPECT_EQ(LocalCluster::Start(zero).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalClusterTest, ReportsAFailingKeygen) {
  auto r = LocalCluster::Start(Options(FakeBinary("echo 'keygen: no entropy' >&2; exit 2")));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("keygen"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no entropy"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("exit status 2"), std::string::npos);
}

TEST_F(LocalClusterTest, ReportsANodeThatExitsWithItsLog) {
  auto r = LocalCluster::Start(Options(
      FakeBinary(std::string(kGoodKeygen) + "echo \"hearsay node: bad flag: $*\" >&2; exit 1")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  const std::string m = r.status().message();
  EXPECT_NE(m.find("exited (exit status 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("hearsay node: bad flag"), std::string::npos) << m;
  // The node's command line, as the harness built it, is in the log too.
  EXPECT_NE(m.find("--cluster-key-file"), std::string::npos) << m;
  EXPECT_NE(m.find("--join 127.0.0.1:"), std::string::npos) << m;
  EXPECT_NE(m.find("--debug-faults"), std::string::npos) << m;
}

// Off loopback (a NetnsBed gives these): each node listens on its own host's fixed ports and its
// command line starts with its exec prefix.
TEST_F(LocalClusterTest, RunsEachNodeOnItsHostThroughItsExecPrefix) {
  LocalClusterOptions o = Options(
      FakeBinary(std::string(kGoodKeygen) + "echo \"hearsay node: bad flag: $*\" >&2; exit 1"));
  o.node_hosts = {"10.9.8.2", "10.9.8.3"};
  o.node_exec_prefix = {{"/usr/bin/env", "PREFIX_MARK=0"}, {"/usr/bin/env", "PREFIX_MARK=1"}};
  auto r = LocalCluster::Start(o);
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find("starting node-0: /usr/bin/env PREFIX_MARK=0 "), std::string::npos) << m;
  EXPECT_NE(m.find("--http 10.9.8.2:8080 --gossip 10.9.8.2:7946"), std::string::npos) << m;
  EXPECT_NE(m.find("--join 10.9.8.3:7946"), std::string::npos) << m;

  o.node_exec_prefix.pop_back();
  EXPECT_EQ(LocalCluster::Start(o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalClusterTest, TimesOutOnANodeThatNeverServes) {
  const auto start = std::chrono::steady_clock::now();
  auto r = LocalCluster::Start(
      Options(FakeBinary(std::string(kGoodKeygen) + "echo still-booting; exec sleep 60")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  const std::string m = r.status().message();
  EXPECT_NE(m.find("/health"), std::string::npos) << m;
  EXPECT_NE(m.find("still-booting"), std::string::npos) << "log tails are included: " << m;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1500ms) << "it waited out the timeout";
}

TEST_F(LocalClusterTest, LeavesNoProcessOrDirectoryBehind) {
  // A fake that records its pid, then never serves: after the failed Start, it must be gone.
  const std::string pids = dir_->File("pids");
  auto r = LocalCluster::Start(
      Options(FakeBinary(std::string(kGoodKeygen) + "echo $$ >> " + pids + "; exec sleep 60")));
  ASSERT_FALSE(r.ok());
  std::ifstream in(pids);
  int pid = 0;
  int count = 0;
  while (in >> pid) {
    ++count;
    EXPECT_NE(::kill(pid, 0), 0) << "node process " << pid << " still exists";
  }
  EXPECT_EQ(count, 2);
}

TEST(PickFreeLoopbackPortsTest, DistinctAndBindable) {
  Result<std::vector<uint16_t>> ports = PickFreeLoopbackPorts(8, true);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  std::sort(ports->begin(), ports->end());
  EXPECT_EQ(std::unique(ports->begin(), ports->end()), ports->end());
  for (uint16_t p : *ports) EXPECT_GT(p, 0);
}

}  // namespace
}  // namespace hearsay::launch
