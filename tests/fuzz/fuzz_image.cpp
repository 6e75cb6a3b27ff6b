// libFuzzer target: the image loader (stb_image with our configuration, then crop and resize).
//   ./build-fuzz/tests/fuzz/fuzz_image -max_total_time=60
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/data/image_io.h"

namespace {

// The loader refuses a PNG whose critical chunks fail their CRC, so nearly every mutation of a PNG would stop
// there. Rewriting the CRCs of a mutated PNG lets the fuzzer reach stb_image's decoder again (an input whose
// first byte is odd keeps its CRCs as they are, so the check itself is fuzzed too).
std::vector<uint8_t> with_png_crcs_repaired(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < 8 || std::memcmp(data, kSignature, 8) != 0) return bytes;
  size_t position = 8;
  while (size - position >= 12) {
    const size_t length = size_t{bytes[position]} << 24 | size_t{bytes[position + 1]} << 16 |
                          size_t{bytes[position + 2]} << 8 | bytes[position + 3];
    if (length > size - position - 12) break;
    const uLong crc = crc32_z(crc32_z(0L, Z_NULL, 0), bytes.data() + position + 4, 4 + length);
    for (int k = 0; k < 4; ++k) bytes[position + 8 + length + k] = static_cast<uint8_t>(crc >> (24 - 8 * k));
    position += 12 + length;
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t size) {
  const std::vector<uint8_t> repaired = size > 8 && raw[8] % 2 == 0 ? with_png_crcs_repaired(raw, size)
                                                                     : std::vector<uint8_t>(raw, raw + size);
  const uint8_t* data = repaired.data();
  // A lower pixel cap than the default keeps each run fast and inside libFuzzer's memory limit; the
  // refusal path itself is the same.
  stx::engine::ImageLimits limits;
  limits.max_pixels = 4'000'000;
  // Odd sizes go to gray, even ones to RGB, so both conversions and both resize directions are reached.
  const stx::engine::ImageShape shape =
      size % 2 ? stx::engine::ImageShape{5, 7, 1} : stx::engine::ImageShape{8, 8, 3};
  try {
    const auto bytes = stx::engine::image_bytes_from_memory(data, size, shape, "fuzz.png", limits);
    if (bytes.size() != static_cast<size_t>(shape.height * shape.width * shape.channels)) __builtin_trap();
  } catch (const stx::engine::Error&) {
    // A clean refusal is the expected outcome for most inputs.
  }
  return 0;
}
