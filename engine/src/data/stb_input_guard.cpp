#include "stb_input_guard.h"

#include <cstring>

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

}  // namespace

const char* stb_input_problem(const uint8_t* data, size_t size) {
  if (!jpeg_huffman_tables_fit(data, size))
    return "a damaged JPEG (a Huffman table declares more than 256 codes)";
  if (png_first_idat_is_empty(data, size))
    return "a PNG whose first image data chunk (IDAT) is empty, not supported";
  return nullptr;
}

}  // namespace stx::engine::data
