#pragma once
// Shared by image files and IDX images: checking the model's shape, and fitting decoded pixels to it.
#include <cstdint>
#include <string>
#include <vector>

#include "stx/engine/data/image_io.h"

namespace stx::engine::data {

// Throws Error naming source_name unless height and width are in [1, 65536], channels is 1 or 3, and
// height * width <= limits.max_pixels.
void check_image_shape(ImageShape shape, const ImageLimits& limits, const std::string& source_name);

// pixels: [height, width, shape.channels], raster order. Centre-crops to the aspect ratio of shape and
// resizes to shape.height x shape.width. Returns shape.height * shape.width * shape.channels bytes.
std::vector<uint8_t> fit_to_shape(const uint8_t* pixels, int width, int height, ImageShape shape,
                                  const std::string& source_name);

}  // namespace stx::engine::data
