// Fault injection for crash-safe writes (reliability.md, "Tests we keep"): a writer SIGKILLed at many
// points while it replaces a file and commits staging folders; a real full disk (ENOSPC at many points,
// including the last block); no inodes left; a read-only file system. The disk faults use a small tmpfs
// mounted in a child process's private mount namespace, so nothing is visible outside that child.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stx/engine/io/atomic_file.h"

namespace fs = std::filesystem;
using stx::engine::Error;
using stx::engine::StagingDirectory;
using stx::engine::write_file_atomic;

namespace {

// --- self-describing versions: a torn, empty or mixed file can never pass for a complete one ------------

constexpr char kMagic[8] = {'S', 'T', 'X', 'F', 'A', 'U', 'L', 'T'};
constexpr size_t kHeaderBytes = 32;  // magic, version, body length, checksum of the body

// FNV-1a over 8-byte words (then the tail bytes): fast enough that the writer spends its time writing.
uint64_t checksum(const char* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (uint64_t word; i + 8 <= size; i += 8) {
    std::memcpy(&word, data + i, 8);
    hash = (hash ^ word) * 0x100000001b3ull;
  }
  for (; i < size; ++i) hash = (hash ^ static_cast<uint8_t>(data[i])) * 0x100000001b3ull;
  return hash;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Every version has a different body, so old bytes mixed into a new file break the checksum.
std::string make_version(uint64_t version, size_t body_bytes) {
  std::string bytes(kHeaderBytes + body_bytes, '\0');
  for (size_t i = 0; i < body_bytes; i += 8) {
    const uint64_t word = splitmix(version * 0x1000003ull + i);
    std::memcpy(&bytes[kHeaderBytes + i], &word, std::min<size_t>(8, body_bytes - i));
  }
  const uint64_t header[3] = {version, body_bytes, checksum(bytes.data() + kHeaderBytes, body_bytes)};
  std::memcpy(&bytes[0], kMagic, 8);
  std::memcpy(&bytes[8], header, sizeof header);
  return bytes;
}

// The version `bytes` holds completely, or nullopt with `problem` saying why not.
std::optional<uint64_t> complete_version(const std::string& bytes, std::string& problem) {
  if (bytes.size() < kHeaderBytes) {
    problem = std::to_string(bytes.size()) + " bytes, shorter than the header (torn or empty)";
    return std::nullopt;
  }
  uint64_t header[3];
  std::memcpy(header, &bytes[8], sizeof header);
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) {
    problem = "no magic at the start";
  } else if (header[1] != bytes.size() - kHeaderBytes) {
    problem = "header of version " + std::to_string(header[0]) + " says " + std::to_string(header[1]) +
              " body bytes, the file has " + std::to_string(bytes.size() - kHeaderBytes);
  } else if (header[2] != checksum(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes)) {
    problem = "the body does not match the checksum of version " + std::to_string(header[0]);
  } else {
    return header[0];
  }
  return std::nullopt;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> entries(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("stx-fault-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(folder_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(folder_, ignored);
  }
  fs::path folder_;
};

// --- killed at many points -----------------------------------------------------------------------------

constexpr size_t kFileBody = 4 << 20;  // several MB, so that many kills land inside the write itself
constexpr size_t kFolderBody = 1 << 20;
constexpr int kKillTrials = 48;

std::string folder_name(uint64_t version) { return "ckpt-" + std::to_string(version); }

// The child tells the parent, through a pipe, each step it finished: 'F' (data.bin holds version v) or
// 'D' (folder ckpt-v is committed). A SIGKILL may land after the step and before its report.
void report(int fd, char kind, uint64_t version) {
  char record[9];
  record[0] = kind;
  std::memcpy(record + 1, &version, 8);
  if (::write(fd, record, sizeof record) != static_cast<ssize_t>(sizeof record)) ::_exit(3);
}

// One checkpoint-like cycle: replace data.bin, then commit a folder holding a file written atomically
// and one written plainly (commit() must fsync both before its rename). `finished` hears of each step.
void write_cycle(
    const fs::path& folder, uint64_t version, size_t file_body, size_t folder_body,
    const std::function<void(char)>& finished = [](char) {}) {
  write_file_atomic(folder / "data.bin", make_version(version, file_body));
  finished('F');
  StagingDirectory staging(folder / folder_name(version));
  write_file_atomic(staging.path() / "weights.bin", make_version(version, folder_body));
  std::ofstream(staging.path() / "notes.txt", std::ios::binary) << make_version(version, 1000);
  staging.commit();
  finished('D');
}

[[noreturn]] void write_until_killed(const fs::path& folder, int report_fd) {
  try {
    for (uint64_t version = 1;; ++version) {
      write_cycle(folder, version, kFileBody, kFolderBody,
                  [&](char step) { report(report_fd, step, version); });
    }
  } catch (...) {
    ::_exit(2);  // a write failed on its own: the parent sees a child that was not killed
  }
}

struct Finished {
  uint64_t file = 0, folder = 0;  // the last reported version of each
};

Finished read_reports(int fd) {
  Finished done;
  char record[9];
  while (::read(fd, record, sizeof record) == static_cast<ssize_t>(sizeof record)) {
    uint64_t version;
    std::memcpy(&version, record + 1, 8);
    (record[0] == 'F' ? done.file : done.folder) = version;
  }
  return done;
}

// What the kill interrupted, judged by the temporaries it left.
struct Tally {
  int file_write = 0, staging = 0, between = 0;
};

// Everything a reader could find wrong after the writer `pid` was killed; empty when all is well.
std::vector<std::string> problems_after_kill(const fs::path& folder, pid_t pid, const Finished& done,
                                             Tally& tally) {
  std::vector<std::string> problems;
  std::string why;
  const auto version = complete_version(contents(folder / "data.bin"), why);
  if (!version) {
    problems.push_back("data.bin is not a complete version: " + why);
  } else if (*version != done.file && *version != done.file + 1) {
    problems.push_back("data.bin holds version " + std::to_string(*version) + ", expected " +
                       std::to_string(done.file) + " or " + std::to_string(done.file + 1));
  }

  // The documented temporary names: `.<name>.tmp-<pid>-<8 hex digits>`, only from the killed writer.
  const std::string suffix = "\\.tmp-" + std::to_string(pid) + "-[0-9a-f]{8}";
  const std::regex top_temporary("\\.(data\\.bin|ckpt-[0-9]+)" + suffix);
  const std::regex staged_temporary("\\.weights\\.bin" + suffix);
  const std::regex committed("ckpt-([0-9]+)");
  int temporaries = 0;
  std::set<uint64_t> folders;
  for (const std::string& name : entries(folder)) {
    const fs::path path = folder / name;
    std::smatch match;
    if (name == "data.bin") continue;
    if (std::regex_match(name, match, committed) && fs::is_directory(path)) {
      const uint64_t v = std::stoull(match[1]);
      folders.insert(v);
      if (entries(path) != std::vector<std::string>{"notes.txt", "weights.bin"}) {
        problems.push_back("committed " + name + " holds" + joined(entries(path)));
        continue;
      }
      for (const char* file : {"notes.txt", "weights.bin"}) {
        const auto held = complete_version(contents(path / file), why);
        if (held != v) {
          problems.push_back(name + "/" + file + " is not version " + std::to_string(v) + ": " + why);
        }
      }
    } else if (std::regex_match(name, match, top_temporary)) {
      ++temporaries;
      if (match[1] == "data.bin") {
        ++tally.file_write;
      } else {
        ++tally.staging;
        for (const std::string& inner : entries(path)) {
          if (inner != "weights.bin" && inner != "notes.txt" && !std::regex_match(inner, staged_temporary)) {
            problems.push_back("staging folder " + name + " holds an unexpected " + inner);
          }
        }
      }
    } else {
      problems.push_back("unexpected entry " + name + " (not a documented temporary of pid " +
                         std::to_string(pid) + ")");
    }
  }
  if (temporaries == 0) ++tally.between;
  // One writer, one write at a time: a second leftover would mean a temporary leaked on a success path.
  if (temporaries > 1) {
    problems.push_back(std::to_string(temporaries) + " temporaries left, at most 1 expected");
  }
  for (uint64_t v = 0; v <= done.folder; ++v) {
    if (!folders.count(v)) problems.push_back("committed folder " + folder_name(v) + " is missing");
  }
  if (!folders.empty() && *folders.rbegin() > done.folder + 1) {
    problems.push_back("folder " + folder_name(*folders.rbegin()) +
                       " appeared before its predecessor was reported");
  }
  return problems;
}

TEST_F(FaultInjectionTest, KilledWriterLeavesOldOrNewCompleteVersionsAndOnlyDocumentedTemporaries) {
  // How long one cycle takes here, so that the kills are spread over a few cycles.
  fs::create_directory(folder_ / "calibration");
  const auto start = std::chrono::steady_clock::now();
  write_cycle(folder_ / "calibration", 0, kFileBody, kFolderBody);
  const auto cycle = std::chrono::steady_clock::now() - start;
  const auto cycle_us =
      std::max<int64_t>(2000, std::chrono::duration_cast<std::chrono::microseconds>(cycle).count());

  Tally tally;
  for (int trial = 0; trial < kKillTrials; ++trial) {
    const fs::path folder = folder_ / ("trial-" + std::to_string(trial));
    fs::create_directory(folder);
    write_cycle(folder, 0, 1000, 1000);  // version 0: what a reader must find if the first write is cut

    // Deterministic delays from 0 to 2 cycles (the first trial kills at once).
    std::mt19937_64 seeded(static_cast<uint64_t>(trial) + 1);
    const int64_t delay_us =
        trial == 0 ? 0 : static_cast<int64_t>(seeded() % static_cast<uint64_t>(cycle_us * 2));

    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      write_until_killed(folder, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const Finished done = read_reports(pipe_fds[0]);
    ::close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "trial " << trial << ": the writer ended by itself (status " << status << ") before the kill";

    const auto problems = problems_after_kill(folder, pid, done, tally);
    ASSERT_TRUE(problems.empty()) << "trial " << trial << ", killed after " << delay_us
                                  << " us, last reports F" << done.file << " D" << done.folder << ":"
                                  << joined(problems);

    // Leftover temporaries do not stand in the way of the next save.
    write_file_atomic(folder / "data.bin", make_version(1000, 100));
    std::string why;
    EXPECT_EQ(complete_version(contents(folder / "data.bin"), why), std::optional<uint64_t>(1000)) << why;
    fs::remove_all(folder);
  }
  std::cout << "kills over " << kKillTrials << " trials (cycle " << cycle_us << " us): " << tally.file_write
            << " inside a file write, " << tally.staging << " inside a staging folder, " << tally.between
            << " between writes\n";
  // The test proves something only if kills really landed inside both kinds of write.
  EXPECT_GT(tally.file_write, 0);
  EXPECT_GT(tally.staging, 0);
}

// --- a real full disk and a read-only file system, on a private tmpfs -------------------------------------

// tmpfs counts space in pages.
const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
const std::string kTmpfsSize = "size=" + std::to_string(256 * kPage);
constexpr int kSkipExit = 77;

// Collects failures inside the child, where gtest assertions would not reach the parent.
struct ChildChecks {
  std::vector<std::string> failures;
  void expect(bool ok, const std::string& what) {
    if (!ok) failures.push_back(what);
  }
  // Expects `action` to throw stx::engine::Error; returns its message ("" when none was thrown).
  std::string expect_error(const std::string& label, const std::function<void()>& action) {
    try {
      action();
    } catch (const Error& error) {
      return error.what();
    }
    failures.push_back(label + ": no stx::engine::Error was thrown");
    return "";
  }
  void expect_mentions(const std::string& label, const std::string& message, const std::string& part) {
    expect(message.find(part) != std::string::npos,
           label + ": error \"" + message + "\" does not mention \"" + part + "\"");
  }
  void expect_error(const std::string& label, const std::function<void()>& action, const std::string& part) {
    const std::string message = expect_error(label, action);
    if (!message.empty()) expect_mentions(label, message, part);
  }
};

// Gives this (child) process its own mount namespace with "/" private, so that mounts never reach the
// host. As root CLONE_NEWNS suffices; otherwise a user namespace maps us to root inside it. Returns
// an empty string, or why it is not possible here.
std::string enter_private_mount_namespace() {
  if (::unshare(CLONE_NEWNS) != 0) {
    const std::string as_is = std::strerror(errno);
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      return "unshare(CLONE_NEWNS) failed (" + as_is + ") and unshare(CLONE_NEWUSER | CLONE_NEWNS) failed (" +
             std::strerror(errno) + ")";
    }
    const std::pair<const char*, std::string> maps[] = {
        {"/proc/self/setgroups", "deny"},
        {"/proc/self/uid_map", "0 " + std::to_string(uid) + " 1"},
        {"/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"}};
    for (const auto& [file, text] : maps) {
      std::ofstream out(file);
      if (!(out << text << std::flush)) {
        return std::string("cannot write ") + file + " in the new user namespace";
      }
    }
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("cannot make / private in the new mount namespace: ") + std::strerror(errno);
  }
  return "";
}

struct ChildResult {
  std::string skipped;                // why the tmpfs could not be had, when it could not
  std::vector<std::string> failures;  // also holds a crash of the child
};

// Runs `body` in a forked child on a fresh tmpfs mounted at `mount_point` with `options`.
ChildResult on_private_tmpfs(const fs::path& mount_point, const std::string& options,
                             const std::function<void(const fs::path&, ChildChecks&)>& body) {
  fs::create_directories(mount_point);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {"", {std::string("pipe: ") + std::strerror(errno)}};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string text = enter_private_mount_namespace();
    int code = kSkipExit;
    if (text.empty() && ::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      text = "mount -t tmpfs -o " + options + " failed in a private mount namespace: " + std::strerror(errno);
    }
    if (text.empty()) {
      ChildChecks checks;
      try {
        body(mount_point, checks);
      } catch (const std::exception& e) {
        checks.failures.push_back(std::string("unexpected exception: ") + e.what());
      }
      for (const std::string& failure : checks.failures) text += failure + '\0';  // messages span lines
      code = checks.failures.empty() ? 0 : 1;
    }
    const bool sent = ::write(pipe_fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::_exit(sent ? code : 2);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, got);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ChildResult result;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSkipExit) {
    result.skipped = text;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    result.failures.push_back("the child ended with status " + std::to_string(status) + "; it said: " + text);
  } else {
    std::istringstream messages(text);
    for (std::string message; std::getline(messages, message, '\0');) result.failures.push_back(message);
  }
  return result;
}

// Runs the body (a lambda, the last argument) on a private tmpfs; reports its failures, or skips the test
// with the reason when no private tmpfs can be had.
#define RUN_ON_PRIVATE_TMPFS(mount_point, options, ...)                                       \
  do {                                                                                        \
    const ChildResult result = on_private_tmpfs(mount_point, options, __VA_ARGS__);           \
    if (!result.skipped.empty()) GTEST_SKIP() << "no private tmpfs here: " << result.skipped; \
    for (const std::string& failure : result.failures) ADD_FAILURE() << failure;              \
  } while (0)

uint64_t free_bytes(const fs::path& folder) {
  struct statvfs info;
  return ::statvfs(folder.c_str(), &info) == 0 ? static_cast<uint64_t>(info.f_bavail) * info.f_frsize : 0;
}

// Fills the file system of `folder` with `folder/filler`, then cuts the filler back until exactly `bytes`
// (a multiple of the page size) are free. Returns "" or why that failed.
std::string leave_free(const fs::path& folder, uint64_t bytes) {
  const int fd = ::open((folder / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::string("cannot open the filler: ") + std::strerror(errno);
  const std::string chunk(64 * 1024, 'f');
  off_t size = 0;
  for (ssize_t wrote; (wrote = ::write(fd, chunk.data(), chunk.size())) != 0;) {
    if (wrote < 0) {
      if (errno == ENOSPC) break;
      ::close(fd);
      return std::string("filling: ") + std::strerror(errno);
    }
    size += wrote;
  }
  const bool cut =
      static_cast<uint64_t>(size) >= bytes && ::ftruncate(fd, size - static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  if (!cut) {
    return "cannot free " + std::to_string(bytes) + " bytes from a " + std::to_string(size) + "-byte filler";
  }
  if (free_bytes(folder) != bytes) {
    return "wanted " + std::to_string(bytes) + " bytes free, statvfs says " +
           std::to_string(free_bytes(folder));
  }
  return "";
}

// Free page counts that make a write of `pages` pages fail at its start, early, half-way and at its end.
std::vector<uint64_t> failing_free_pages(uint64_t pages) {
  std::set<uint64_t> chosen;
  for (uint64_t p : {uint64_t{0}, uint64_t{1}, uint64_t{2}, pages / 3, pages / 2, pages - 2, pages - 1}) {
    if (p < pages) chosen.insert(p);
  }
  return {chosen.begin(), chosen.end()};
}

const std::string kNoSpace = std::strerror(ENOSPC);

TEST_F(FaultInjectionTest, DiskFullAtManyPointsKeepsTheOldFileAndLeavesNoTemporary) {
  RUN_ON_PRIVATE_TMPFS(folder_ / "mnt", kTmpfsSize, [](const fs::path& mnt, ChildChecks& checks) {
    const fs::path target = mnt / "model.bin";
    const std::string old_bytes = make_version(1, 20000);
    // Sizes that end on, just past and well inside a page.
    for (const uint64_t size : {uint64_t{1}, kPage, kPage + 1, 16 * kPage + 100, 73 * kPage + 10}) {
      const std::string new_bytes(size, 'n');
      const uint64_t pages = (size + kPage - 1) / kPage;
      for (const uint64_t free_pages : failing_free_pages(pages)) {
        const std::string label =
            std::to_string(size) + " bytes with " + std::to_string(free_pages) + " pages free";
        fs::remove(mnt / "filler");
        write_file_atomic(target, old_bytes);
        const std::string setup = leave_free(mnt, free_pages * kPage);
        if (!setup.empty()) return checks.expect(false, label + ": " + setup);
        checks.expect_error(
            label, [&] { write_file_atomic(target, new_bytes); },
            "cannot write " + target.string() + ": " + kNoSpace);
        checks.expect(contents(target) == old_bytes, label + ": the old file changed");
        checks.expect(entries(mnt) == std::vector<std::string>{"filler", "model.bin"},
                      label + ": left" + joined(entries(mnt)));
        // The temporary's pages came back: it was closed and removed, not merely hidden.
        checks.expect(free_bytes(mnt) == free_pages * kPage, label + ": space not given back");
      }
      // Control: with exactly enough pages free, the same write succeeds (the failures above were the disk).
      fs::remove(mnt / "filler");
      write_file_atomic(target, old_bytes);
      checks.expect(leave_free(mnt, pages * kPage).empty(),
                    "cannot leave " + std::to_string(pages) + " pages");
      write_file_atomic(target, new_bytes);
      checks.expect(contents(target) == new_bytes,
                    std::to_string(size) + " bytes: the write that fits failed");
    }
  });
}

TEST_F(FaultInjectionTest, DiskFullWhileStagingKeepsTheCommittedFolderAndRemovesTheStaging) {
  RUN_ON_PRIVATE_TMPFS(folder_ / "mnt", kTmpfsSize, [](const fs::path& mnt, ChildChecks& checks) {
    // A committed checkpoint, then a second one whose config fits (1 page) but whose weights may not.
    const std::string config = "{\"step\": 2}\n", weights = make_version(2, 65536 + 100);
    const uint64_t weight_pages = (weights.size() + kPage - 1) / kPage;
    {
      StagingDirectory first(mnt / "step-1");
      write_file_atomic(first.path() / "model.bin", make_version(1, 30000));
      first.commit();
    }
    for (const uint64_t free_pages : failing_free_pages(1 + weight_pages)) {
      const std::string label = "staging with " + std::to_string(free_pages) + " pages free";
      const std::string setup = leave_free(mnt, free_pages * kPage);
      if (!setup.empty()) return checks.expect(false, label + ": " + setup);
      fs::path staging_path;
      const std::string failing_file = free_pages == 0 ? "config.json" : "model.bin";
      const std::string message = checks.expect_error(label, [&] {
        StagingDirectory staging(mnt / "step-2");
        staging_path = staging.path();
        write_file_atomic(staging.path() / "config.json", config);
        write_file_atomic(staging.path() / "model.bin", weights);
        staging.commit();
      });
      // The message names the file inside the staging folder that did not fit.
      if (!message.empty()) {
        checks.expect_mentions(label, message,
                               "cannot write " + (staging_path / failing_file).string() + ": " + kNoSpace);
      }
      checks.expect(entries(mnt) == std::vector<std::string>{"filler", "step-1"},
                    label + ": left" + joined(entries(mnt)));
      checks.expect(entries(mnt / "step-1") == std::vector<std::string>{"model.bin"},
                    label + ": step-1 changed");
      std::string why;
      checks.expect(
          complete_version(contents(mnt / "step-1" / "model.bin"), why) == std::optional<uint64_t>(1),
          label + ": step-1/model.bin: " + why);
      checks.expect(free_bytes(mnt) == free_pages * kPage, label + ": space not given back");
    }
    // Control: one more page and the checkpoint commits.
    checks.expect(leave_free(mnt, (1 + weight_pages) * kPage).empty(), "cannot leave room for step-2");
    StagingDirectory staging(mnt / "step-2");
    write_file_atomic(staging.path() / "config.json", config);
    write_file_atomic(staging.path() / "model.bin", weights);
    staging.commit();
    checks.expect(contents(mnt / "step-2" / "model.bin") == weights,
                  "step-2 did not commit with enough room");
  });
}

TEST_F(FaultInjectionTest, NoInodesLeftFailsBeforeWritingAndKeepsTheOldFile) {
  RUN_ON_PRIVATE_TMPFS(
      folder_ / "mnt", kTmpfsSize + ",nr_inodes=16", [](const fs::path& mnt, ChildChecks& checks) {
        const fs::path target = mnt / "model.bin";
        write_file_atomic(target, "old");
        // Use up the inodes, so that neither a temporary file nor a staging folder can be created.
        for (int i = 0;; ++i) {
          const int fd =
              ::open((mnt / ("inode-" + std::to_string(i))).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
          if (fd < 0) {
            if (errno != ENOSPC) {
              return checks.expect(false, std::string("using up inodes: ") + std::strerror(errno));
            }
            break;
          }
          ::close(fd);
        }
        const auto before = entries(mnt);
        checks.expect_error(
            "file", [&] { write_file_atomic(target, "new"); },
            "cannot write " + target.string() + ": " + kNoSpace);
        checks.expect_error(
            "staging", [&] { StagingDirectory staging(mnt / "step-2"); },
            "cannot create " + (mnt / "step-2").string() + ": " + kNoSpace);
        checks.expect(contents(target) == "old", "the old file changed");
        checks.expect(entries(mnt) == before, "entries changed:" + joined(entries(mnt)));
      });
}

TEST_F(FaultInjectionTest, ReadOnlyFileSystemFailsCleanlyEvenForRoot) {
  // chmod does not stop root; a read-only mount does.
  RUN_ON_PRIVATE_TMPFS(folder_ / "mnt", kTmpfsSize, [](const fs::path& mnt, ChildChecks& checks) {
    const fs::path target = mnt / "model.bin";
    write_file_atomic(target, "old");
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, kTmpfsSize.c_str()) != 0) {
      return checks.expect(false, std::string("remount read-only: ") + std::strerror(errno));
    }
    const std::string read_only = std::strerror(EROFS);
    checks.expect_error(
        "file", [&] { write_file_atomic(target, "new"); },
        "cannot write " + target.string() + ": " + read_only);
    checks.expect_error(
        "staging", [&] { StagingDirectory staging(mnt / "step-2"); },
        "cannot create " + (mnt / "step-2").string() + ": " + read_only);
    checks.expect(contents(target) == "old", "the old file changed");
    checks.expect(entries(mnt) == std::vector<std::string>{"model.bin"},
                  "entries changed:" + joined(entries(mnt)));
  });
}

}  // namespace
