#include "stx/engine/data/image_io.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "file_bytes.h"
#include "image_fit.h"
#include "stb_config.h"
#include "stb_input_guard.h"
#include "stx/engine/error.h"

namespace stx::engine {
namespace {

constexpr uint64_t kMaxImageSide = STBI_MAX_DIMENSIONS;

uint64_t big_endian_u32(const uint8_t* bytes) {
  return (uint64_t{bytes[0]} << 24) | (uint64_t{bytes[1]} << 16) | (uint64_t{bytes[2]} << 8) |
         uint64_t{bytes[3]};
}

}  // namespace

namespace data {

void check_image_shape(ImageShape shape, const ImageLimits& limits, const std::string& source_name) {
  const bool sides_ok = shape.height >= 1 && shape.width >= 1 && uint64_t(shape.height) <= kMaxImageSide &&
                        uint64_t(shape.width) <= kMaxImageSide;
  if (!sides_ok || (shape.channels != 1 && shape.channels != 3)) {
    throw Error(source_name + ": the image shape " + std::to_string(shape.height) + "x" +
                std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                " is not usable (expected height and width from 1 to 65536 and 1 or 3 channels)");
  }
  const uint64_t pixels = static_cast<uint64_t>(shape.height) * static_cast<uint64_t>(shape.width);
  if (pixels > limits.max_pixels) {
    throw Error(source_name + ": the image shape " + std::to_string(shape.height) + "x" +
                std::to_string(shape.width) + " is over the limit of " + std::to_string(limits.max_pixels) +
                " pixels");
  }
}

std::vector<uint8_t> fit_to_shape(const uint8_t* pixels, int width, int height, ImageShape shape,
                                  const std::string& source_name) {
  const int channels = shape.channels;
  // The largest centred rectangle with the target's aspect ratio (rounded to whole pixels, at least one).
  const uint64_t w = static_cast<uint64_t>(width), h = static_cast<uint64_t>(height);
  const uint64_t target_w = static_cast<uint64_t>(shape.width),
                 target_h = static_cast<uint64_t>(shape.height);
  uint64_t crop_w = w, crop_h = h;
  if (w * target_h > target_w * h) {
    crop_w = std::clamp<uint64_t>((h * target_w + target_h / 2) / target_h, 1, w);
  } else {
    crop_h = std::clamp<uint64_t>((w * target_h + target_w / 2) / target_w, 1, h);
  }
  const uint64_t x0 = (w - crop_w) / 2, y0 = (h - crop_h) / 2;
  const size_t source_stride = static_cast<size_t>(w) * channels;
  const uint8_t* crop = pixels + static_cast<size_t>(y0) * source_stride + static_cast<size_t>(x0) * channels;

  const size_t row_bytes = static_cast<size_t>(shape.width) * channels;
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(shape.height));
  if (crop_w == target_w && crop_h == target_h) {
    for (int y = 0; y < shape.height; ++y) {
      std::memcpy(out.data() + y * row_bytes, crop + y * source_stride, row_bytes);
    }
    return out;
  }
  const int ok = stbir_resize_uint8(crop, static_cast<int>(crop_w), static_cast<int>(crop_h),
                                    static_cast<int>(source_stride), out.data(), shape.width, shape.height,
                                    static_cast<int>(row_bytes), channels);
  if (!ok) throw Error(source_name + ": resizing the image failed (out of memory)");
  return out;
}

}  // namespace data

std::vector<uint8_t> image_bytes_from_memory(const uint8_t* data, size_t size, ImageShape shape,
                                             const std::string& source_name, const ImageLimits& limits) {
  data::check_image_shape(shape, limits, source_name);
  if (size == 0) throw Error(source_name + ": the file is empty");
  if (size > limits.max_file_bytes || size > static_cast<size_t>(INT_MAX)) {
    throw Error(source_name + ": " + std::to_string(size) + " bytes is over the image file limit of " +
                std::to_string(std::min<uint64_t>(limits.max_file_bytes, INT_MAX)) + " bytes");
  }
  const int length = static_cast<int>(size);

  // The header alone first, so that a huge (or lying) image is refused before any pixel memory is allocated.
  const auto check_pixels = [&](uint64_t w, uint64_t h) {
    if (w == 0 || h == 0) throw Error(source_name + ": the image header has no pixels");
    if (w > kMaxImageSide || h > kMaxImageSide) {
      throw Error(source_name + ": " + std::to_string(w) + "x" + std::to_string(h) +
                  " pixels, over the limit of " + std::to_string(kMaxImageSide) + " pixels a side");
    }
    if (w * h > limits.max_pixels) {
      throw Error(source_name + ": " + std::to_string(w) + "x" + std::to_string(h) + " is " +
                  std::to_string(w * h) + " pixels, over the limit of " + std::to_string(limits.max_pixels));
    }
  };
  if (const char* problem = data::stb_input_problem(data, size)) throw Error(source_name + ": " + problem);
  int width = 0, height = 0, file_channels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &file_channels)) {
    // stbi_info tries each format in turn and always ends with "unknown image type"; for a PNG, whose size
    // sits at fixed offsets in the IHDR chunk, say when the refusal was about its size.
    constexpr uint8_t kPngStart[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                       0,    0,   0,   13,  'I',  'H',  'D',  'R'};
    if (size >= 24 && std::memcmp(data, kPngStart, sizeof kPngStart) == 0) {
      check_pixels(big_endian_u32(data + 16), big_endian_u32(data + 20));
    }
    throw Error(source_name + ": not a PNG, JPEG, BMP or TGA image, or a damaged one (stb_image: " +
                stbi_failure_reason() + ")");
  }
  // stb_image 2.27 reports a top-down BMP's height as stored, negative; its loader takes the absolute value.
  const auto side = [](int x) { return static_cast<uint64_t>(std::llabs(static_cast<long long>(x))); };
  check_pixels(side(width), side(height));

  // stb converts to the requested channel count: gray is repeated, RGB becomes luma, alpha is dropped.
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, length, &width, &height, &file_channels, shape.channels), &stbi_image_free);
  if (!pixels) {
    throw Error(source_name + ": cannot decode the image, it is damaged or truncated (stb_image: " +
                stbi_failure_reason() + ")");
  }
  // The decoder's dimensions are the ones the buffer has.
  check_pixels(static_cast<uint64_t>(std::max(width, 0)), static_cast<uint64_t>(std::max(height, 0)));
  return data::fit_to_shape(pixels.get(), width, height, shape, source_name);
}

std::vector<uint8_t> load_image_bytes(const std::filesystem::path& file, ImageShape shape,
                                      const ImageLimits& limits) {
  data::check_image_shape(shape, limits, file.string());
  const std::vector<uint8_t> bytes = data::read_file_bytes(file, limits.max_file_bytes);
  return image_bytes_from_memory(bytes.data(), bytes.size(), shape, file.string(), limits);
}

}  // namespace stx::engine
