#pragma once
// Reading a whole file with a size limit (the datasets' own helper; stx_engine_io has a similar one).
#include <cstdint>
#include <filesystem>
#include <vector>

namespace stx::engine::data {

// Throws Error naming the file if it is missing, not a regular file, larger than max_bytes or unreadable.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& file, uint64_t max_bytes);

// The size of a regular file; throws Error naming it if it is missing, not a regular file or over max_bytes.
uint64_t regular_file_size(const std::filesystem::path& file, uint64_t max_bytes);

}  // namespace stx::engine::data
