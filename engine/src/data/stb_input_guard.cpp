#include "stb_input_guard.h"

#include <zlib.h>

#include <cstring>
#include <string>

namespace stx::engine::data {
namespace {

constexpr int kNoMarker = -1;

// Reads like stb's memory context: past the end, bytes read as 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool at_end() const { return position_ >= size_; }
  int next() { return position_ < size_ ? data_[position_++] : 0; }
  int next16() {
    const int high = next();
    return (high << 8) | next();
  }
  void skip(size_t count) { position_ = count > size_ - position_ ? size_ : position_ + count; }

  // After 0xFF: skips fill bytes (more 0xFF) and returns the marker code, or kNoMarker at the end.
  int marker_after_ff() {
    while (!at_end()) {
      const int code = next();
      if (code != 0xFF) return code;
    }
    return kNoMarker;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

bool is_restart(int code) { return code >= 0xD0 && code <= 0xD7; }

// Entropy-coded data ends at the first marker; 0xFF00 is a stuffed 0xFF byte and restarts are part of it.
int marker_ending_entropy_data(Reader& in) {
  while (!in.at_end()) {
    if (in.next() != 0xFF) continue;
    const int code = in.marker_after_ff();
    if (code == kNoMarker) return kNoMarker;
    if (code != 0x00 && !is_restart(code)) return code;
  }
  return kNoMarker;
}

// One DHT segment, table by table as stb reads it. False if a table declares more than 256 codes.
bool huffman_segment_fits(Reader& in) {
  int remaining = in.next16() - 2;
  while (remaining > 0 && !in.at_end()) {
    in.next();  // table class and id
    int codes = 0;
    for (int length = 0; length < 16; ++length) codes += in.next();
    if (codes > 256) return false;
    in.skip(static_cast<size_t>(codes));
    remaining -= 17 + codes;
  }
  return true;
}

// The walk follows stb's own reading: segments by their length (skipping padding between them as stb
// does), DHT tables one by one, and entropy-coded data up to the first marker that is not a stuffed 0xFF00
// or a restart. Where stb would stop with an error the walk may go on: it then checks more than stb reads.
bool jpeg_huffman_tables_fit(const uint8_t* data, size_t size) {
  Reader in(data, size);
  // stb takes data as a JPEG when it starts with 0xFF (fill allowed) and the SOI marker.
  if (in.next() != 0xFF || in.marker_after_ff() != 0xD8) return true;

  int pending = kNoMarker;  // the marker that ended the last entropy-coded data
  while (!in.at_end() || pending != kNoMarker) {
    int marker = pending;
    pending = kNoMarker;
    if (marker == kNoMarker) {
      if (in.next() != 0xFF) continue;  // padding between segments, skipped as stb does
      marker = in.marker_after_ff();
      if (marker == kNoMarker) break;
    }
    if (marker == 0xD9) break;                           // EOI: stb stops reading
    if (marker == 0x00 || is_restart(marker)) continue;  // no segment follows
    if (marker == 0xC4) {
      if (!huffman_segment_fits(in)) return false;
      continue;
    }
    const int length = in.next16();
    if (length < 2) break;  // stb refuses every segment this short
    in.skip(static_cast<size_t>(length - 2));
    if (marker == 0xDA) pending = marker_ending_entropy_data(in);  // SOS: the scan's coded data follows
  }
  return true;
}

uint32_t big_endian_u32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

// stb reads PNG chunks in order, each as length, type, data and CRC.
bool png_first_idat_is_empty(const uint8_t* data, size_t size) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < sizeof kSignature || std::memcmp(data, kSignature, sizeof kSignature) != 0) return false;
  size_t position = sizeof kSignature;
  while (size - position >= 8) {
    const uint32_t length = big_endian_u32(data + position);
    const uint8_t* type = data + position + 4;
    if (std::memcmp(type, "IDAT", 4) == 0) return length == 0;
    if (std::memcmp(type, "IEND", 4) == 0) return false;
    if (length > size - position - 8) return false;  // stb runs out of data here
    position += 8 + size_t{length} + 4;
    if (position > size) return false;
  }
  return false;
}

// One walk over a PNG's chunks, in stb's order, up to IEND. Returns what is wrong, or "" when nothing is:
// - a chunk that claims more bytes than the file has left: stb_image grows its buffer for the image data to
//   the length an IDAT chunk claims before reading it, up to 1 GB, so a 128-byte file could make it ask for
//   gigabytes. The file is truncated (or damaged) and is refused here, naming the chunk;
// - a whole critical chunk (IHDR, PLTE, IDAT, IEND: an upper-case first letter) whose CRC does not match:
//   stb_image ignores the CRC, so a flipped bit in the pixels would decode as a wrong image. Like libpng, a
//   damaged ancillary chunk (text, gamma) is let through: stb ignores its contents anyway.
std::string png_chunk_problem(const uint8_t* data, size_t size) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < sizeof kSignature || std::memcmp(data, kSignature, sizeof kSignature) != 0) return "";
  size_t position = sizeof kSignature;
  while (size - position >= 8) {
    const uint32_t length = big_endian_u32(data + position);
    const uint8_t* type = data + position + 4;
    const std::string name(reinterpret_cast<const char*>(type), 4);
    if (length > size - position - 8) {
      if (name == "IEND") return "";
      return "a truncated PNG: its " + name + " chunk claims " + std::to_string(length) + " bytes, the file has " +
             std::to_string(size - position - 8) + " left";
    }
    if (size - position - 8 - length < 4) return "";  // the CRC cut off: stb reports that, having allocated nothing
    const bool critical = type[0] >= 'A' && type[0] <= 'Z';
    if (critical && crc32_z(crc32_z(0L, Z_NULL, 0), type, 4 + size_t{length}) != big_endian_u32(type + 4 + length)) {
      return "a damaged PNG: the checksum (CRC) of its " + name + " chunk does not match its data";
    }
    if (name == "IEND") return "";
    position += 12 + size_t{length};
  }
  return "";
}

uint32_t little_endian_u32(const uint8_t* bytes) {
  return uint32_t{bytes[0]} | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16) | (uint32_t{bytes[3]} << 24);
}

// stb_image reads past the end of a BMP as zero bytes, so a cut-off file decodes with black rows. For the
// uncompressed kinds (the only ones stb takes besides refusing RLE), the pixel rows' size follows from the
// header: offset + stride x (|height| - 1) + the last row without its padding (stb does not read that).
// Returns how many bytes the file needs, or 0 when it cannot tell; sizes past stb's limits are left to the
// size check that follows, whose message says so.
uint64_t bmp_bytes_needed(const uint8_t* data, size_t size) {
  if (size < 30 || data[0] != 'B' || data[1] != 'M') return 0;
  const uint64_t offset = little_endian_u32(data + 10), header = little_endian_u32(data + 14);
  int64_t width = 0, height = 0, bits = 0, compression = 0;
  if (header == 12) {
    width = data[18] | (data[19] << 8);
    height = data[20] | (data[21] << 8);
    bits = data[24] | (data[25] << 8);
  } else if (header >= 40 && size >= 34) {
    width = static_cast<int32_t>(little_endian_u32(data + 18));
    height = static_cast<int32_t>(little_endian_u32(data + 22));
    bits = data[28] | (data[29] << 8);
    compression = little_endian_u32(data + 30);
  } else {
    return 0;
  }
  if (compression != 0 && compression != 3) return 0;  // RLE and the rest: stb refuses them
  const int64_t rows = height < 0 ? -height : height;
  constexpr int64_t kStbMaxSide = 1 << 16;  // STBI_MAX_DIMENSIONS in stb_config.h
  if (width <= 0 || rows == 0 || width > kStbMaxSide || rows > kStbMaxSide || bits <= 0 || bits > 32) return 0;
  const uint64_t row_bits = static_cast<uint64_t>(width) * static_cast<uint64_t>(bits);
  const uint64_t stride = (row_bits + 31) / 32 * 4;
  return offset + stride * static_cast<uint64_t>(rows - 1) + (row_bits + 7) / 8;
}

}  // namespace

const char* stb_input_problem(const uint8_t* data, size_t size) {
  thread_local std::string message;  // the returned phrase lives until this thread's next call
  const uint64_t bmp_needed = bmp_bytes_needed(data, size);
  if (bmp_needed > size) {
    message = "a truncated BMP: its pixels need " + std::to_string(bmp_needed) + " bytes, the file has " +
              std::to_string(size);
    return message.c_str();
  }
  message = png_chunk_problem(data, size);
  if (!message.empty()) return message.c_str();
  if (!jpeg_huffman_tables_fit(data, size))
    return "a damaged JPEG (a Huffman table declares more than 256 codes)";
  if (png_first_idat_is_empty(data, size))
    return "a PNG whose first image data chunk (IDAT) is empty, not supported";
  return nullptr;
}

}  // namespace stx::engine::data
