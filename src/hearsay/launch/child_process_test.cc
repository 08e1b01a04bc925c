#include "hearsay/launch/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "hearsay/launch/temp_dir.h"

namespace hearsay::launch {
namespace {

using namespace std::chrono_literals;

class ChildProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<TempDir>> d = TempDir::Create("hearsay-child-test-");
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dir_ = std::move(d).value();
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(ChildProcessTest, CapturesOutputAndExitStatus) {
  const std::string log = dir_->File("out.log");
  auto child =
      ChildProcess::Spawn({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"}, log);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ASSERT_TRUE((*child)->Wait(10s).ok());
  EXPECT_FALSE((*child)->running());
  EXPECT_EQ((*child)->exit_code(), 3);
  EXPECT_EQ((*child)->ExitDescription(), "exit status 3");
  const std::string tail = TailFile(log, 10);
  EXPECT_NE(tail.find("to-stdout"), std::string::npos) << tail;
  EXPECT_NE(tail.find("to-stderr"), std::string::npos) << tail;
}

TEST_F(ChildProcessTest, ReportsAProgramThatCannotRun) {
  auto missing = ChildProcess::Spawn({dir_->File("no-such-program")}, dir_->File("log"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  auto empty = ChildProcess::Spawn({}, dir_->File("log"));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  auto bad_log = ChildProcess::Spawn({"/bin/true"}, dir_->File("no/such/dir/log"));
  EXPECT_FALSE(bad_log.ok());
}

TEST_F(ChildProcessTest, WaitTimesOutThenKillReaps) {
  auto child = ChildProcess::Spawn({"/bin/sleep", "30"}, dir_->File("log"));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  EXPECT_TRUE((*child)->running());
  EXPECT_EQ((*child)->Wait(50ms).code(), StatusCode::kDeadlineExceeded);
  (*child)->Kill();
  EXPECT_FALSE((*child)->running());
  EXPECT_EQ((*child)->exit_code(), -SIGKILL);
  (*child)->Kill();  // idempotent
}

TEST_F(ChildProcessTest, SignalTerminates) {
  auto child = ChildProcess::Spawn({"/bin/sleep", "30"}, dir_->File("log"));
  ASSERT_TRUE(child.ok());
  (*child)->Signal(SIGTERM);
  ASSERT_TRUE((*child)->Wait(10s).ok());
  EXPECT_EQ((*child)->exit_code(), -SIGTERM);
  EXPECT_NE((*child)->ExitDescription().find("signal 15"), std::string::npos);
}

TEST_F(ChildProcessTest, DestructorKillsTheChild) {
  pid_t pid = 0;
  {
    auto child = ChildProcess::Spawn({"/bin/sleep", "30"}, dir_->File("log"));
    ASSERT_TRUE(child.ok());
    pid = (*child)->pid();
  }
  EXPECT_NE(::kill(pid, 0), 0) << "the child was reaped, so its pid no longer exists";
}

TEST(TailFileTest, KeepsTheLastLines) {
  auto dir = TempDir::Create("hearsay-tail-test-");
  ASSERT_TRUE(dir.ok());
  const std::string path = (*dir)->File("f");
  auto child =
      ChildProcess::Spawn({"/bin/sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done"}, path);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE((*child)->Wait(10s).ok());
  EXPECT_EQ(TailFile(path, 2), "line4\nline5\n");
  EXPECT_EQ(TailFile(path, 100), "line1\nline2\nline3\nline4\nline5\n");
  EXPECT_NE(TailFile((*dir)->File("missing"), 3).find("cannot read"), std::string::npos);
}

TEST(TempDirTest, RemovedUnlessKept) {
  std::string path;
  {
    auto dir = TempDir::Create("hearsay-tempdir-test-");
    ASSERT_TRUE(dir.ok());
    path = (*dir)->path();
    auto child = ChildProcess::Spawn({"/bin/true"}, (*dir)->File("inside.log"));
    ASSERT_TRUE(child.ok());
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace hearsay::launch
