#include "file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/error.h"

namespace stx::engine::data {

RegularFile open_data_file(const std::filesystem::path& file, uint64_t max_bytes) {
  RegularFile opened;
  try {
    opened = open_regular_file(file);  // the kind and the size come from the opened descriptor
  } catch (const Error&) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) throw Error(file.string() + ": no such file");
    throw;
  }
  if (opened.size > max_bytes) {
    throw Error(file.string() + ": " + std::to_string(opened.size) + " bytes is over the limit of " +
                std::to_string(max_bytes) + " bytes");
  }
  return opened;
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& file, uint64_t max_bytes) {
  const RegularFile opened = open_data_file(file, max_bytes);
  const uint64_t expected = opened.size;
  FILE* stream = opened.stream.get();

  // Read in chunks up to the limit rather than trusting the size: the file may change while we read it.
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(expected) + kChunk);  // + one chunk: the last read asks for a whole one
  for (;;) {
    const size_t old_size = bytes.size();
    bytes.resize(old_size + kChunk);
    const size_t got = std::fread(bytes.data() + old_size, 1, kChunk, stream);
    bytes.resize(old_size + got);
    if (bytes.size() > max_bytes) {
      throw Error(file.string() + ": grew past the limit of " + std::to_string(max_bytes) +
                  " bytes while read");
    }
    if (got < kChunk) break;
  }
  if (std::ferror(stream)) throw Error(file.string() + ": read error (" + std::strerror(errno) + ")");
  return bytes;
}

}  // namespace stx::engine::data
