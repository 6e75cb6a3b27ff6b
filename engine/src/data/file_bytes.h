#pragma once
// Reading a whole data file with a size limit, in the words the dataset scan uses, up to the limit even when
// the file grows while it is read (read_file in atomic_file.h reads the engine's own files).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "stx/engine/io/atomic_file.h"

namespace stx::engine::data {

// Throws Error naming the file if it is missing, not a regular file, larger than max_bytes or unreadable.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& file, uint64_t max_bytes);

// `file` open for reading, checked once from its descriptor (atomic_file.h: open_regular_file): throws Error
// naming it if it is missing, not a regular file (a FIFO is refused before any read) or over max_bytes.
RegularFile open_data_file(const std::filesystem::path& file, uint64_t max_bytes);

}  // namespace stx::engine::data
