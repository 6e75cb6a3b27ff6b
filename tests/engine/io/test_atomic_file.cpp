// Atomic writes, whole-file reads and staging folders: what a user relies on when a save fails.
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "io_test_support.h"
#include "stx/engine/io/atomic_file.h"

namespace fs = std::filesystem;
using stx::engine::Error;
using stx::engine::Overwrite;
using stx::engine::StagingDirectory;

namespace {

// A fresh folder per test, removed afterwards (permissions restored first, so that a failed read-only
// test does not leave it behind).
class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    folder_ = fs::temp_directory_path() /
              ("stx-io-test-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(folder_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(folder_, fs::perms::owner_all, ignored);
    fs::remove_all(folder_, ignored);
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path folder_;
};

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool running_as_root() { return ::geteuid() == 0; }

// Root ignores folder permissions, and CI runs as root: there the read-only scenarios run in a child
// process that has dropped to the unprivileged uid/gid 65534. Returns true when `expect_refusal`
// returned true in whichever process ran it.
bool refused_without_privileges(const std::function<bool()>& expect_refusal) {
  if (!running_as_root()) return expect_refusal();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(90);
    }
    ::_exit(expect_refusal() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// chmod 0555: entries can be listed but none created, renamed or removed.
constexpr fs::perms kReadOnlyFolder = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                      fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;

}  // namespace

TEST_F(AtomicFileTest, WritesNewFile) {
  stx::engine::write_file_atomic(folder_ / "a.bin", "hello");
  EXPECT_EQ(contents(folder_ / "a.bin"), "hello");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.bin"});
}

TEST_F(AtomicFileTest, WritesEmptyFileAndBinaryBytes) {
  stx::engine::write_file_atomic(folder_ / "empty", "");
  EXPECT_TRUE(fs::is_regular_file(folder_ / "empty"));
  EXPECT_EQ(fs::file_size(folder_ / "empty"), 0u);

  const std::string binary("\0\xff\n\r\0", 5);
  stx::engine::write_file_atomic(folder_ / "binary", binary);
  EXPECT_EQ(contents(folder_ / "binary"), binary);
}

TEST_F(AtomicFileTest, ReplaceOverwritesWithNewContent) {
  stx::engine::write_file_atomic(folder_ / "a.txt", "the old and longer content");
  stx::engine::write_file_atomic(folder_ / "a.txt", "new", Overwrite::Replace);
  EXPECT_EQ(contents(folder_ / "a.txt"), "new");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFileTest, RefuseKeepsExistingFileAndWritesNothing) {
  stx::engine::write_file_atomic(folder_ / "a.txt", "old");
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] { stx::engine::write_file_atomic(folder_ / "a.txt", "new", Overwrite::Refuse); },
      (folder_ / "a.txt").string() + " already exists"));
  EXPECT_EQ(contents(folder_ / "a.txt"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFileTest, RefuseWritesWhenPathIsFree) {
  stx::engine::write_file_atomic(folder_ / "a.txt", "first", Overwrite::Refuse);
  EXPECT_EQ(contents(folder_ / "a.txt"), "first");
}

TEST_F(AtomicFileTest, MissingFolderFailsWithPathAndLeavesNoTemporary) {
  const fs::path path = folder_ / "missing" / "a.bin";
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::write_file_atomic(path, "x"); },
                                    "cannot write " + path.string() + ": No such file or directory"));
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, PathThatIsAFolderFailsAndKeepsTheFolder) {
  fs::create_directory(folder_ / "sub");
  stx::engine::write_file_atomic(folder_ / "sub" / "inside", "kept");
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::write_file_atomic(folder_ / "sub", "x"); },
                                    "cannot write " + (folder_ / "sub").string()));
  EXPECT_EQ(contents(folder_ / "sub" / "inside"), "kept");
  EXPECT_EQ(entries(), std::vector<std::string>{"sub"});
}

TEST_F(AtomicFileTest, ReadOnlyFolderFailsCleanlyAndKeepsOldFile) {
  stx::engine::write_file_atomic(folder_ / "a.txt", "old");
  fs::permissions(folder_, kReadOnlyFolder);

  EXPECT_TRUE(refused_without_privileges([&] {
    return static_cast<bool>(
        ThrowsErrorContaining([&] { stx::engine::write_file_atomic(folder_ / "a.txt", "new"); },
                              "cannot write " + (folder_ / "a.txt").string() + ": Permission denied"));
  }));
  fs::permissions(folder_, fs::perms::owner_all);
  EXPECT_EQ(contents(folder_ / "a.txt"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.txt"});
}

TEST_F(AtomicFileTest, WriteFailingMidwayKeepsOldFileAndRemovesTemporary) {
  // given: an old file, and a file size limit that makes write() fail part way, as a full disk would
  stx::engine::write_file_atomic(folder_ / "a.bin", "old");
  rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);

  // when
  const bool refused = ThrowsErrorContaining(
      [&] { stx::engine::write_file_atomic(folder_ / "a.bin", std::string(10000, 'n')); },
      "cannot write " + (folder_ / "a.bin").string() + ": File too large");
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_handler);

  // then
  EXPECT_TRUE(refused);
  EXPECT_EQ(contents(folder_ / "a.bin"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.bin"});
}

TEST_F(AtomicFileTest, FsyncDirectoryWorksAndNamesMissingFolder) {
  EXPECT_NO_THROW(stx::engine::fsync_directory(folder_));
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::fsync_directory(folder_ / "missing"); },
                                    (folder_ / "missing").string()));
}

TEST_F(AtomicFileTest, ReadFileReturnsContentUpToTheLimit) {
  stx::engine::write_file_atomic(folder_ / "a.bin", "12345");
  const std::vector<uint8_t> bytes = stx::engine::read_file(folder_ / "a.bin", 5);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "12345");
  stx::engine::write_file_atomic(folder_ / "empty", "");
  EXPECT_TRUE(stx::engine::read_file(folder_ / "empty", 0).empty());
}

TEST_F(AtomicFileTest, ReadFileRefusesTooLargeNamingBothSizes) {
  stx::engine::write_file_atomic(folder_ / "a.bin", "123456");
  EXPECT_TRUE(ThrowsErrorContaining(
      [&] { stx::engine::read_file(folder_ / "a.bin", 5); },
      (folder_ / "a.bin").string() + ": the file is 6 bytes, more than the limit of 5 bytes"));
}

TEST_F(AtomicFileTest, ReadFileNamesMissingFile) {
  EXPECT_TRUE(
      ThrowsErrorContaining([&] { stx::engine::read_file(folder_ / "nothing", 100); },
                            "cannot read " + (folder_ / "nothing").string() + ": No such file or directory"));
}

TEST_F(AtomicFileTest, ReadFileRefusesFolderAndSpecialFiles) {
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::read_file(folder_, 100); },
                                    "cannot read " + folder_.string() + ": it is a folder, not a file"));
  // A FIFO would block a naive reader forever.
  ASSERT_EQ(::mkfifo((folder_ / "pipe").c_str(), 0600), 0);
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::read_file(folder_ / "pipe", 100); },
                                    (folder_ / "pipe").string() + ": not a regular file"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { stx::engine::read_file("/dev/null", 100); },
                                    "/dev/null: not a regular file"));
}

TEST_F(AtomicFileTest, StagingDirectoryCommitMakesTheFolderAppear) {
  const fs::path target = folder_ / "step-000100";
  StagingDirectory staging(target);
  EXPECT_EQ(staging.target(), target);
  EXPECT_EQ(staging.path().parent_path(), folder_);
  EXPECT_EQ(
      staging.path().filename().string().rfind(".step-000100.tmp-" + std::to_string(::getpid()) + "-", 0), 0u)
      << staging.path();
  EXPECT_TRUE(fs::is_directory(staging.path()));
  EXPECT_FALSE(fs::exists(target));

  stx::engine::write_file_atomic(staging.path() / "model.bin", "weights");
  fs::create_directory(staging.path() / "extra");
  std::ofstream(staging.path() / "extra" / "plain.txt") << "plain write";
  staging.commit();

  EXPECT_TRUE(staging.committed());
  EXPECT_EQ(contents(target / "model.bin"), "weights");
  EXPECT_EQ(contents(target / "extra" / "plain.txt"), "plain write");
  EXPECT_EQ(entries(), std::vector<std::string>{"step-000100"});
}

TEST_F(AtomicFileTest, StagingDirectoryWithoutCommitIsRemoved) {
  fs::path staging_path;
  {
    StagingDirectory staging(folder_ / "step-1");
    staging_path = staging.path();
    stx::engine::write_file_atomic(staging.path() / "model.bin", "partial");
  }
  EXPECT_FALSE(fs::exists(staging_path));
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, StagingDirectoryRefusesExistingTargetAndCleansUp) {
  // An empty folder counts too: POSIX rename would silently replace it.
  for (const bool target_is_empty_folder : {false, true}) {
    const fs::path target = folder_ / (target_is_empty_folder ? "empty-target" : "full-target");
    fs::create_directory(target);
    if (!target_is_empty_folder) stx::engine::write_file_atomic(target / "old.bin", "old");
    {
      StagingDirectory staging(target);
      stx::engine::write_file_atomic(staging.path() / "new.bin", "new");
      EXPECT_TRUE(ThrowsErrorContaining([&] { staging.commit(); }, target.string() + " already exists"));
      EXPECT_FALSE(staging.committed());
    }
    if (target_is_empty_folder) {
      EXPECT_TRUE(fs::is_empty(target));
    } else {
      EXPECT_EQ(contents(target / "old.bin"), "old");
    }
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"empty-target", "full-target"}));
}

TEST_F(AtomicFileTest, StagingDirectoryRefusesExistingFileTarget) {
  stx::engine::write_file_atomic(folder_ / "taken", "a file");
  {
    StagingDirectory staging(folder_ / "taken");
    EXPECT_TRUE(ThrowsErrorContaining([&] { staging.commit(); }, "already exists"));
  }
  EXPECT_EQ(contents(folder_ / "taken"), "a file");
  EXPECT_EQ(entries(), std::vector<std::string>{"taken"});
}

TEST_F(AtomicFileTest, StagingDirectoryMoveHandsOverOwnership) {
  StagingDirectory first(folder_ / "moved");
  const fs::path staging_path = first.path();
  StagingDirectory second(std::move(first));
  EXPECT_TRUE(first.path().empty());
  EXPECT_EQ(second.path(), staging_path);
  { StagingDirectory discarded(std::move(second)); }  // its destructor removes the folder, once
  EXPECT_FALSE(fs::exists(staging_path));

  StagingDirectory third(folder_ / "kept");
  StagingDirectory fourth(folder_ / "replaced");
  const fs::path replaced_path = fourth.path();
  fourth = std::move(third);  // fourth's own staging folder is abandoned and removed
  EXPECT_FALSE(fs::exists(replaced_path));
  fourth.commit();
  EXPECT_TRUE(fs::is_directory(folder_ / "kept"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { fourth.commit(); }, "already committed"));
  EXPECT_TRUE(ThrowsErrorContaining([&] { third.commit(); }, "moved away"));
  EXPECT_EQ(entries(), std::vector<std::string>{"kept"});
}

TEST_F(AtomicFileTest, StagingDirectoryInMissingFolderNamesTarget) {
  const fs::path target = folder_ / "missing" / "step-1";
  EXPECT_TRUE(ThrowsErrorContaining([&] { StagingDirectory staging(target); },
                                    "cannot create " + target.string() + ": No such file or directory"));
}

TEST_F(AtomicFileTest, StagingDirectoryInReadOnlyFolderFailsCleanly) {
  fs::permissions(folder_, kReadOnlyFolder);
  EXPECT_TRUE(refused_without_privileges([&] {
    return static_cast<bool>(
        ThrowsErrorContaining([&] { StagingDirectory staging(folder_ / "step-1"); }, "Permission denied"));
  }));
  fs::permissions(folder_, fs::perms::owner_all);
  EXPECT_TRUE(entries().empty());
}
