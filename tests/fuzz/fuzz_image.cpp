// libFuzzer target: the image loader (stb_image with our configuration, then crop and resize).
//   ./build-fuzz/tests/fuzz/fuzz_image -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "stx/engine/error.h"
#include "stx/engine/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
