#include "stx/engine/export/png_writer.h"

#include <zlib.h>

#include <cstring>

#include "stx/engine/error.h"

// Only the writer is compiled here; the decoder lives with the dataset readers.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
// stb is third-party code: its warnings are not ours to fix.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image_write.h>
#pragma GCC diagnostic pop

namespace stx::engine {
namespace {

void append_u32(std::string& out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                         static_cast<char>(v)};
  out.append(bytes, 4);
}

// One PNG chunk: length, type, data, CRC-32 over type and data (zlib's crc32 is the PNG one).
std::string chunk(const char type[4], const std::string& data) {
  std::string out;
  append_u32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  append_u32(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(body.data()),
                                              static_cast<uInt>(body.size()))));
  return out;
}

}  // namespace

std::string encode_png(const uint8_t* pixels, int width, int height, int channels, const PngText& text) {
  if (width < 1 || height < 1 || channels < 1 || channels > 4) throw Error("PNG: bad image size or channels");
  int size = 0;
  unsigned char* encoded = stbi_write_png_to_mem(pixels, width * channels, width, height, channels, &size);
  if (!encoded || size < 33) throw Error("PNG: encoding failed");
  std::string png(reinterpret_cast<const char*>(encoded), static_cast<size_t>(size));
  STBIW_FREE(encoded);
  // The signature (8 bytes) and IHDR (25 bytes) come first; tEXt chunks may follow IHDR directly.
  std::string chunks;
  for (const auto& [keyword, value] : text) {
    if (keyword.empty() || keyword.size() > 79 || keyword.find('\0') != std::string::npos) {
      throw Error("PNG: bad text keyword '" + keyword + "'");
    }
    std::string data = keyword;
    data.push_back('\0');
    for (char c : value) data.push_back(c == '\0' ? ' ' : c);
    chunks += chunk("tEXt", data);
  }
  png.insert(33, chunks);
  return png;
}

void write_png(const std::filesystem::path& path, const uint8_t* pixels, int width, int height, int channels,
               const PngText& text, Overwrite overwrite) {
  write_file_atomic(path, encode_png(pixels, width, height, channels, text), overwrite);
}

}  // namespace stx::engine
