#pragma once
// Gzip-compressed IDX image files (the MNIST / Fashion-MNIST format): big-endian magic 0x00000803 (unsigned
// bytes, 3 dimensions), then count, rows and columns as big-endian uint32, then count * rows * cols pixels.
// Each image is converted to the model's shape like an image file (gray, centre crop, resize).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "stx/engine/data/image_io.h"

namespace stx::engine::data {

struct IdxImages {
  std::vector<uint8_t> bytes;  // count images of shape.height * shape.width * shape.channels bytes
  size_t count = 0;
};

// progress(images_done, images_total) is optional; returning false throws Error("cancelled").
using ImageProgress = std::function<bool(size_t images_done, size_t images_total)>;

// True for names ending in "-idx3-ubyte.gz".
bool is_idx_images_name(const std::filesystem::path& file);

// Refuses (Error naming source_name) a wrong magic, dimensions of 0 or over 65536 on a side or over
// limits.max_pixels, dimensions that cannot fit in the compressed size, converted bytes over
// max_output_bytes, a damaged or truncated gzip stream, and data after the last image.
IdxImages decode_idx_images(const uint8_t* gzip_data, size_t size, ImageShape shape,
                            const ImageLimits& limits, uint64_t max_output_bytes,
                            const std::string& source_name, const ImageProgress& progress = {});

// Reads the file (at most limits.max_file_bytes) and decodes it.
IdxImages load_idx_images(const std::filesystem::path& file, ImageShape shape, const ImageLimits& limits,
                          uint64_t max_output_bytes, const ImageProgress& progress = {});

}  // namespace stx::engine::data
