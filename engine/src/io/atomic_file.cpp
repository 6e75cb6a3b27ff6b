#include "stx/engine/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <new>
#include <random>
#include <string>
#include <system_error>

namespace stx::engine {
namespace fs = std::filesystem;

namespace {

std::string reason(int error_number) { return std::generic_category().message(error_number); }

// Closes on scope exit; close() errors matter only after writing, where the writer checks them itself.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  void release() { fd_ = -1; }
  // Returns 0 or the errno of close(): on NFS, a failed write can first show up here.
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

fs::path folder_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// `.<name>.tmp-<pid>-<random>`: hidden, in the same folder (so rename is atomic), unique per attempt.
fs::path temporary_sibling(const fs::path& path) {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(generator() & 0xffffffffull));
  // Room for the suffix, so that a name near NAME_MAX (255) still gets a temporary.
  const std::string name = path.filename().string().substr(0, 200);
  return folder_of(path) / ("." + name + suffix);
}

bool exists_without_following(const fs::path& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

// Returns 0 or errno. Refuses an existing `to`, atomically where the filesystem supports it.
int rename_without_replacing(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  // Filesystems without RENAME_NOREPLACE (some network and FUSE ones): check, then rename.
  if (exists_without_following(to)) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

// Returns 0 or errno.
int sync_directory(const fs::path& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return errno;
  // EINVAL: the filesystem cannot sync folders at all; there is nothing more a caller could do.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) return errno;
  return 0;
}

// Returns 0 or errno.
int sync_file(const fs::path& file) {
  FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return errno;
  return ::fsync(fd.get()) == 0 ? 0 : errno;
}

// Returns 0 or errno.
int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

std::string already_exists(const fs::path& path) {
  return path.string() + " already exists; choose another name or remove it first";
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view bytes, Overwrite overwrite) {
  const std::string failure = "cannot write " + path.string() + ": ";
  if (path.filename().empty()) throw Error(failure + "the path names no file");
  if (overwrite == Overwrite::Refuse && exists_without_following(path)) throw Error(already_exists(path));

  fs::path temporary;
  int fd_number = -1;
  for (int attempt = 0; attempt < 16 && fd_number < 0; ++attempt) {
    temporary = temporary_sibling(path);
    fd_number = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_number < 0 && errno != EEXIST) throw Error(failure + reason(errno));
  }
  if (fd_number < 0) throw Error(failure + "cannot create a unique temporary file");

  FileDescriptor fd(fd_number);
  int error = write_all(fd.get(), bytes);
  if (error == 0 && ::fsync(fd.get()) != 0) error = errno;
  const int close_error = fd.close();
  if (error == 0) error = close_error;
  if (error == 0) {
    if (overwrite == Overwrite::Refuse) {
      error = rename_without_replacing(temporary, path);
    } else if (::rename(temporary.c_str(), path.c_str()) != 0) {
      error = errno;
    }
  }
  if (error != 0) {
    ::unlink(temporary.c_str());
    if (overwrite == Overwrite::Refuse && error == EEXIST) throw Error(already_exists(path));
    throw Error(failure + reason(error));
  }
  // The rename is done; this makes it survive a power loss.
  if (const int sync_error = sync_directory(folder_of(path)); sync_error != 0) {
    throw Error(failure + "cannot sync the folder: " + reason(sync_error));
  }
}

void fsync_directory(const fs::path& dir) {
  if (const int error = sync_directory(dir); error != 0) {
    throw Error("cannot sync folder " + dir.string() + ": " + reason(error));
  }
}

RegularFile open_regular_file(const fs::path& path) {
  const std::string failure = "cannot read " + path.string() + ": ";
  // O_NONBLOCK: opening a FIFO must not hang before fstat can refuse it.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) throw Error(failure + reason(errno));
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) throw Error(failure + reason(errno));
  if (S_ISDIR(info.st_mode)) throw Error(failure + "it is a folder, not a file");
  if (!S_ISREG(info.st_mode)) throw Error(failure + "not a regular file");
  // A regular file: reads block as usual from here.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) throw Error(failure + reason(errno));
  RegularFile file;
  file.stream.reset(::fdopen(fd.get(), "rb"));
  if (!file.stream) throw Error(failure + reason(errno));
  fd.release();  // the stream owns it now
  file.size = static_cast<uint64_t>(info.st_size);
  return file;
}

std::vector<uint8_t> read_file(const fs::path& path, uint64_t max_bytes) {
  const std::string failure = "cannot read " + path.string() + ": ";
  RegularFile file = open_regular_file(path);
  if (file.size > max_bytes) {
    throw Error(failure + "the file is " + std::to_string(file.size) + " bytes, more than the limit of " +
                std::to_string(max_bytes) + " bytes");
  }
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(static_cast<size_t>(file.size));
  } catch (const std::bad_alloc&) {
    throw Error(failure + "not enough memory for " + std::to_string(file.size) + " bytes");
  }
  const size_t got = std::fread(bytes.data(), 1, bytes.size(), file.stream.get());
  if (std::ferror(file.stream.get())) throw Error(failure + reason(errno));
  if (got < bytes.size()) throw Error(failure + "the file became shorter while it was read");
  return bytes;
}

StagingDirectory::StagingDirectory(fs::path target) : target_(std::move(target)) {
  if (target_.filename().empty()) target_ = target_.parent_path();  // "a/b/" names the folder "b"
  const std::string failure = "cannot create " + target_.string() + ": ";
  if (target_.filename().empty() || target_.filename() == "." || target_.filename() == "..") {
    throw Error(failure + "the path names no folder");
  }
  for (int attempt = 0; attempt < 16; ++attempt) {
    fs::path candidate = temporary_sibling(target_);
    if (::mkdir(candidate.c_str(), 0777) == 0) {
      path_ = std::move(candidate);
      return;
    }
    if (errno != EEXIST) throw Error(failure + reason(errno));
  }
  throw Error(failure + "cannot create a unique staging folder");
}

StagingDirectory::~StagingDirectory() { remove_staging(); }

StagingDirectory::StagingDirectory(StagingDirectory&& other) noexcept
    : target_(std::move(other.target_)), path_(std::move(other.path_)), committed_(other.committed_) {
  other.path_.clear();
}

StagingDirectory& StagingDirectory::operator=(StagingDirectory&& other) noexcept {
  if (this != &other) {
    remove_staging();
    target_ = std::move(other.target_);
    path_ = std::move(other.path_);
    committed_ = other.committed_;
    other.path_.clear();
  }
  return *this;
}

void StagingDirectory::remove_staging() noexcept {
  if (committed_ || path_.empty()) return;
  try {
    std::error_code ignored;  // best effort: a destructor has no one to report to
    fs::remove_all(path_, ignored);
  } catch (...) {
  }
}

void StagingDirectory::commit() {
  const std::string failure = "cannot write " + target_.string() + ": ";
  if (path_.empty()) throw Error(failure + "the staging folder was moved away");
  if (committed_) throw Error(failure + "it was already committed");

  // Every file must be on disk before the rename makes the folder look complete.
  std::error_code walk_error;
  for (fs::recursive_directory_iterator it(path_, walk_error), end; !walk_error && it != end;
       it.increment(walk_error)) {
    std::error_code status_error;
    const fs::file_status status = it->symlink_status(status_error);
    int error = status_error ? status_error.value() : 0;
    if (fs::is_regular_file(status)) error = sync_file(it->path());
    if (fs::is_directory(status)) error = sync_directory(it->path());
    if (error != 0) throw Error(failure + "cannot sync " + it->path().string() + ": " + reason(error));
  }
  if (walk_error) throw Error(failure + "cannot list " + path_.string() + ": " + walk_error.message());
  if (const int error = sync_directory(path_); error != 0) throw Error(failure + reason(error));

  const int rename_error = rename_without_replacing(path_, target_);
  if (rename_error == EEXIST || rename_error == ENOTEMPTY) throw Error(already_exists(target_));
  if (rename_error != 0) throw Error(failure + reason(rename_error));
  committed_ = true;
  if (const int error = sync_directory(folder_of(target_)); error != 0) {
    throw Error(failure + "cannot sync the parent folder: " + reason(error));
  }
}

}  // namespace stx::engine
