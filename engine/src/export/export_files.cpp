// Where exports go: the target check every writer runs first, numbered names, and the PNG and TXT writers.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "stx/engine/error.h"
#include "stx/engine/export/export.h"

namespace stx::engine {
namespace fs = std::filesystem;

void check_export_target(const fs::path& path, Overwrite overwrite) {
  const std::string failure = "cannot write " + path.string() + ": ";
  if (path.filename().empty()) throw Error(failure + "the path names no file");
  std::error_code error;
  // symlink_status: a link is replaced by the rename, never followed, so it counts as the file itself.
  const fs::file_status target = fs::symlink_status(path, error);
  if (fs::is_directory(target)) throw Error(failure + "it is a folder");
  if (fs::exists(target) && overwrite == Overwrite::Refuse) {
    throw Error(path.string() + " already exists and is kept: allow replacing files to write over it", {"overwrite"});
  }
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::file_status folder_status = fs::status(folder, error);
  if (!fs::exists(folder_status)) throw Error(failure + "the folder " + folder.string() + " does not exist");
  if (!fs::is_directory(folder_status)) throw Error(failure + folder.string() + " is not a folder");
  // Checked now, so that a long generation does not end in a file it cannot write.
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    throw Error(failure + "cannot add files to " + folder.string() + " (" + std::strerror(error) + ")");
  }
}

fs::path numbered_path(const fs::path& path, int index, int count) {
  if (count < 1 || index < 1 || index > count) {
    throw Error("cannot number " + path.string() + ": output " + std::to_string(index) + " of " +
                std::to_string(count) + " (expected 1 to " + std::to_string(count) + ")");
  }
  if (count == 1) return path;
  return path.parent_path() /
         (path.stem().string() + "-" + std::to_string(index) + path.extension().string());
}

void write_png_export(const fs::path& path, const uint8_t* pixels, int width, int height, int channels,
                      const ExportInfo& info, Overwrite overwrite) {
  check_export_target(path, overwrite);
  std::string png;
  try {
    png = encode_png(pixels, width, height, channels, export_png_text(info));
  } catch (const Error& e) {
    throw Error("cannot write " + path.string() + ": " + e.what());
  }
  write_file_atomic(path, png, overwrite);
}

void write_text(const fs::path& path, std::string_view bytes, Overwrite overwrite) {
  check_export_target(path, overwrite);
  write_file_atomic(path, bytes, overwrite);
}

}  // namespace stx::engine
