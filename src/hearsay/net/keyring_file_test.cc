#include "hearsay/net/keyring_file.h"

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace hearsay::net::keyring_file_test {
namespace {

using gossip::ClusterKey;
using gossip::Keyring;

ClusterKey Key(uint8_t fill) {
  std::array<uint8_t, gossip::kClusterKeyBytes> b;
  b.fill(fill);
  return ClusterKey::FromBytes(b).value();
}

class KeyringFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(sodium_init(), 0);
    std::string t = (std::filesystem::temp_directory_path() / "keyring_file_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    dir_ = t;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string dir_;
};

TEST_F(KeyringFileTest, WriteThenReadKeepsKeysAndPrimary) {
  Keyring ring(Key(1));
  ASSERT_TRUE(ring.Install(Key(2)).ok());
  ASSERT_TRUE(ring.Install(Key(3)).ok());
  ASSERT_TRUE(ring.Use(Key(2)).ok());
  const std::string path = File("keyring");
  ASSERT_TRUE(WriteKeyringFile(path, ring).ok());
  Result<Keyring> back = ReadKeyFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back->primary(), Key(2));
  EXPECT_EQ(back->size(), 3u);
  EXPECT_TRUE(back->Contains(Key(1)));
  EXPECT_TRUE(back->Contains(Key(3)));
  // Private to the service user, and no temporary file is left behind.
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(KeyringFileTest, OverwriteReplacesTheWholeFile) {
  const std::string path = File("keyring");
  Keyring two(Key(1));
  ASSERT_TRUE(two.Install(Key(2)).ok());
  ASSERT_TRUE(WriteKeyringFile(path, two).ok());
  ASSERT_TRUE(WriteKeyringFile(path, Keyring(Key(2))).ok());
  Result<Keyring> back = ReadKeyFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->size(), 1u);
  EXPECT_EQ(*back->primary(), Key(2));
}

TEST_F(KeyringFileTest, ErrorsNameTheFile) {
  Result<Keyring> missing = ReadKeyFile(File("missing"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  // The OS's reason is in the message.
  EXPECT_NE(missing.status().message().find("No such file or directory"), std::string::npos)
      << missing.status().message();
  Result<Keyring> directory = ReadKeyFile(::testing::TempDir());
  EXPECT_EQ(directory.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(directory.status().message().find("Is a directory"), std::string::npos)
      << directory.status().message();
  Write(File("bad"), Key(1).ToBase64() + "\nnot a key\n");
  Result<Keyring> bad = ReadKeyFile(File("bad"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find(File("bad")), std::string::npos);
  const Status unwritable = WriteKeyringFile(File("no/such/dir/keyring"), Keyring(Key(1)));
  EXPECT_EQ(unwritable.code(), StatusCode::kInternal);
}

TEST_F(KeyringFileTest, AWorldReadableKeyFileIsWarnedAbout) {
  const std::string path = File("loose");
  Write(path, Key(1).ToBase64() + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  std::optional<std::string> w = KeyFileModeWarning(path);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("0644"), std::string::npos) << *w;
  EXPECT_NE(w->find("chmod 600 " + path), std::string::npos) << *w;
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_FALSE(KeyFileModeWarning(path).has_value());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);  // readable by the service's group: fine
  EXPECT_FALSE(KeyFileModeWarning(path).has_value());
  // The node's own keyring file is written 0600: nothing to warn about.
  ASSERT_TRUE(WriteKeyringFile(File("own"), Keyring(Key(2))).ok());
  EXPECT_FALSE(KeyFileModeWarning(File("own")).has_value());
}

TEST_F(KeyringFileTest, StartupPrefersAnExistingKeyringFile) {
  const std::string cluster = File("cluster.key");
  const std::string state = File("keyring");
  Write(cluster, Key(1).ToBase64() + "\n");
  Keyring rotated(Key(2));
  ASSERT_TRUE(WriteKeyringFile(state, rotated).ok());
  Result<StartupKeyring> s = LoadStartupKeyring(cluster, state);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s->keyring.primary(), Key(2));
  EXPECT_EQ(s->keyring.size(), 1u);
  EXPECT_NE(s->source.find("keyring file"), std::string::npos);
}

TEST_F(KeyringFileTest, StartupSeedsAMissingKeyringFile) {
  const std::string cluster = File("cluster.key");
  const std::string state = File("keyring");
  Write(cluster, Key(1).ToBase64() + "\n");
  Result<StartupKeyring> s = LoadStartupKeyring(cluster, state);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s->keyring.primary(), Key(1));
  Result<Keyring> seeded = ReadKeyFile(state);
  ASSERT_TRUE(seeded.ok());
  EXPECT_EQ(*seeded->primary(), Key(1));
  // Without a keyring file, only the cluster key file is read.
  s = LoadStartupKeyring(cluster, "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s->keyring.primary(), Key(1));
}

TEST_F(KeyringFileTest, StartupErrors) {
  EXPECT_EQ(LoadStartupKeyring("", "").status().code(), StatusCode::kFailedPrecondition);
  const Result<StartupKeyring> only_missing_state = LoadStartupKeyring("", File("keyring"));
  EXPECT_EQ(only_missing_state.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(only_missing_state.status().message().find("does not exist"), std::string::npos);
  Write(File("bad-state"), "garbage\n");
  Write(File("cluster.key"), Key(1).ToBase64() + "\n");
  // A corrupt keyring file stops the node rather than silently falling back to an old key.
  EXPECT_EQ(LoadStartupKeyring(File("cluster.key"), File("bad-state")).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::net::keyring_file_test
