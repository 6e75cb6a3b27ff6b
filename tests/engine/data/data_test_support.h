#pragma once
// Fixtures for the dataset suites: a temporary folder removed afterwards, file writing, gzip, IDX files,
// and an assertion on the text of an Error.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "../../support/temp_folder.h"
#include "stx/engine/error.h"

namespace stx::engine::test {

using stx::test::TempFolder;

inline void write_file(const std::filesystem::path& file, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

inline void write_file(const std::filesystem::path& file, const std::string& text) {
  write_file(file, std::vector<uint8_t>(text.begin(), text.end()));
}

inline std::vector<uint8_t> read_whole_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<uint8_t> random_bytes(size_t count, uint32_t seed) {
  std::vector<uint8_t> bytes(count);
  uint32_t state = seed * 2654435761u + 1;
  for (uint8_t& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(state >> 24);
  }
  return bytes;
}

inline std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& raw) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<uint8_t> out(deflateBound(&stream, static_cast<uLong>(raw.size())) + 32);
  stream.next_in = const_cast<Bytef*>(raw.data());
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(stream.total_out);
  return out;
}

// An uncompressed IDX image file: magic, count, rows, cols (big-endian), then the pixels.
inline std::vector<uint8_t> idx_bytes(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols,
                                      const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> bytes;
  for (const uint32_t value : {magic, count, rows, cols}) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
  }
  bytes.insert(bytes.end(), pixels.begin(), pixels.end());
  return bytes;
}

// Runs `action`, which must throw Error whose text contains every one of `parts`.
inline void expect_error(const std::function<void()>& action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "expected an Error containing \"" << (parts.empty() ? "" : parts.front()) << "\"";
  } catch (const Error& e) {
    const std::string text = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" is not in the error: " << text;
    }
    EXPECT_EQ(text.find('\n'), std::string::npos) << "the error is not one line: " << text;
  }
}

}  // namespace stx::engine::test
