#pragma once
// Image files to model bytes. Decodes PNG, JPEG, BMP and TGA (stb_image, only those formats compiled in),
// converts to the model's channel count, centre-crops to the model's aspect ratio and resizes to its size.
// Bad input (corrupt, truncated, unsupported, too many pixels) throws Error naming the file and the reason.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stx::engine {

// The model's image size. channels is 1 (gray) or 3 (RGB).
struct ImageShape {
  int height = 0, width = 0, channels = 0;
};

struct ImageLimits {
  uint64_t max_pixels = 64'000'000;  // checked on the header (stbi_info) before any pixel is decoded
  uint64_t max_file_bytes = 512ull << 20;
};

// Returns height * width * channels bytes: raster order, channels interleaved (R, G, B per pixel).
// Gray to RGB repeats the gray value; RGB to gray uses stb's luma weights (77 R + 150 G + 29 B) / 256.
// An alpha channel is dropped (not composited). Resizing (stb_image_resize: Mitchell when shrinking,
// Catmull-Rom when enlarging) works on the stored values; a crop already of the target size is copied as is.
std::vector<uint8_t> load_image_bytes(const std::filesystem::path& file, ImageShape shape,
                                      const ImageLimits& limits = {});
// The same from bytes in memory; source_name is used in error messages.
std::vector<uint8_t> image_bytes_from_memory(const uint8_t* data, size_t size, ImageShape shape,
                                             const std::string& source_name, const ImageLimits& limits = {});

}  // namespace stx::engine
