// The bed itself: namespaces with their own addresses on one bridge, link controls that take
// effect, and nothing left behind after the bed is gone.
#include "hearsay/launch/netns_bed.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "hearsay/launch/child_process.h"

namespace hearsay::launch {
namespace {

// The names of namespaces and links that start with `prefix`, from `ip`.
std::string NamesWith(const std::string& prefix) {
  std::string out;
  for (const char* what : {"netns list", "-o link show"}) {
    const std::string cmd = std::string("ip ") + what + " 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof(line), p) != nullptr) {
      if (std::string(line).find(prefix) != std::string::npos) out += line;
    }
    ::pclose(p);
  }
  return out;
}

TEST(NetnsBedTest, MakesNamespacesWithTheirOwnAddressesAndRemovesThemAll) {
  if (Status why = NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: no network namespaces here: " << why.ToString();
  }
  const std::string prefix = "hsb" + std::to_string(::getpid());
  {
    Result<std::unique_ptr<NetnsBed>> bed = NetnsBed::Create(3);
    ASSERT_TRUE(bed.ok()) << bed.status().ToString();
    NetnsBed& b = **bed;
    EXPECT_NE(b.Address(0), b.Address(1));
    EXPECT_NE(NamesWith(prefix).find(b.Namespace(2)), std::string::npos);
    // The address is on an interface inside the namespace, not in the parent.
    std::vector<std::string> show = b.ExecPrefix(1);
    show.insert(show.end(), {"/usr/sbin/ip", "-4", "addr", "show"});
    EXPECT_TRUE(RunCommand(show).ok());
    EXPECT_TRUE(b.CapBandwidth(1, 1000).ok());
    EXPECT_TRUE(b.CapBandwidth(1, 0).ok());
    EXPECT_TRUE(b.Partition({0}, {1, 2}).ok());
    EXPECT_TRUE(b.DropOneWay(1, 2).ok());
    EXPECT_TRUE(b.HealPartitions().ok());
    std::printf(
        "netns bed: delay/loss injection %s\n",
        b.NetemAvailable() ? "available (netem)" : "NOT available: this kernel has no netem qdisc");
  }
  EXPECT_EQ(NamesWith(prefix), "") << "the bed left names behind";
}

TEST(NetnsBedTest, CleanStaleRemovesWhatADeadRunLeft) {
  if (Status why = NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: no network namespaces here: " << why.ToString();
  }
  // A pid that runs no process: a child that has exited and been reaped.
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  int wstatus = 0;
  ::waitpid(dead, &wstatus, 0);
  const std::string ns = "hsb" + std::to_string(dead) + "n0";
  const std::string link = "hsb" + std::to_string(dead) + "br";
  ASSERT_TRUE(RunCommand({"/usr/sbin/ip", "netns", "add", ns}).ok());
  ASSERT_TRUE(RunCommand({"/usr/sbin/ip", "link", "add", link, "type", "bridge"}).ok());
  NetnsBed::CleanStale();
  EXPECT_EQ(NamesWith("hsb" + std::to_string(dead)), "");
}

}  // namespace
}  // namespace hearsay::launch
