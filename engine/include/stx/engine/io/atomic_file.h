#pragma once
// Crash-safe file writing: whatever happens (crash, power loss, disk full, read-only folder), a reader
// sees either the old file or the complete new one, never a torn mix, and failures leave no temporaries.
//
//   write_file_atomic(folder / "export.bin", bytes);             // replaces an existing file atomically
//   write_file_atomic(folder / "notes.txt", text, Overwrite::Refuse);
//
//   StagingDirectory staging(checkpoints / "step-001000");        // builds ".step-001000.tmp-<pid>-<random>"
//   write_file_atomic(staging.path() / "model.safetensors", weights);
//   staging.commit();                                             // one rename makes it appear complete
//
// All failures throw stx::engine::Error with one line naming the file and the reason.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "stx/engine/error.h"

namespace stx::engine {

enum class Overwrite { Replace, Refuse };

// Writes `bytes` to `path`: a temporary file in the same folder, fsync, rename over path, fsync the folder.
// On any failure throws Error("cannot write <path>: <reason>") with strerror text (disk full, read-only
// folder, missing folder...), removes the temporary, and leaves an existing file intact.
// Overwrite::Refuse throws Error("<path> already exists; ...") if path exists, writing nothing.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                       Overwrite overwrite = Overwrite::Replace);

// Makes the folder's entries (a rename, a new file) durable. Throws Error on failure.
void fsync_directory(const std::filesystem::path& dir);

// A regular file open for reading, and its size when it was opened.
struct RegularFile {
  std::unique_ptr<FILE, int (*)(FILE*)> stream{nullptr, &std::fclose};
  uint64_t size = 0;
};
// Opens `path` for reading if it is a regular file. Anything else (a FIFO, a device, a folder) is refused from
// the opened descriptor before any read, so that a named pipe put where a file belongs cannot block the
// reader. Errors: "cannot read <path>: <reason>" ("it is a folder, not a file", "not a regular file", strerror).
RegularFile open_regular_file(const std::filesystem::path& path);

// Reads a whole regular file, refusing more than max_bytes. Errors name the file: missing, not a regular
// file, too large (with both sizes), read error.
std::vector<uint8_t> read_file(const std::filesystem::path& path, uint64_t max_bytes);

// A folder being built beside its final place, committed by one rename: used for checkpoint folders.
// The constructor creates `<parent>/.<name>.tmp-<pid>-<random>`; files are written into path() (with
// write_file_atomic or plain writes); commit() fsyncs every file in it and the folder, renames it to
// `target` (which must not exist: Error otherwise) and fsyncs the parent. The destructor removes the
// staging folder if commit() was never called or failed.
class StagingDirectory {
 public:
  explicit StagingDirectory(std::filesystem::path target);
  ~StagingDirectory();

  StagingDirectory(const StagingDirectory&) = delete;
  StagingDirectory& operator=(const StagingDirectory&) = delete;
  StagingDirectory(StagingDirectory&& other) noexcept;
  StagingDirectory& operator=(StagingDirectory&& other) noexcept;

  // The staging folder to write into; empty in a moved-from object.
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& target() const { return target_; }
  bool committed() const { return committed_; }

  void commit();

 private:
  void remove_staging() noexcept;

  std::filesystem::path target_;
  std::filesystem::path path_;
  bool committed_ = false;
};

}  // namespace stx::engine
