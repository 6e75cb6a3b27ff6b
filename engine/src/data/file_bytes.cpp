#include "file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "stx/engine/atomic_file.h"
#include "stx/engine/error.h"

namespace stx::engine::data {

uint64_t regular_file_size(const std::filesystem::path& file, uint64_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) throw Error(file.string() + ": no such file");
  if (!std::filesystem::is_regular_file(status)) throw Error(file.string() + ": not a regular file");
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec) throw Error(file.string() + ": cannot read its size (" + ec.message() + ")");
  if (size > max_bytes) {
    throw Error(file.string() + ": " + std::to_string(size) + " bytes is over the limit of " +
                std::to_string(max_bytes) + " bytes");
  }
  return size;
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& file, uint64_t max_bytes) {
  const uint64_t expected = regular_file_size(file, max_bytes);
  // Checked again on the opened descriptor: a FIFO swapped in since the check above is refused, not read.
  const RegularFile opened = open_regular_file(file);
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
