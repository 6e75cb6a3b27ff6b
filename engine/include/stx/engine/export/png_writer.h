// PNG files written through stb_image_write, atomically, with optional tEXt chunks (keyword, text) that
// carry how the image was made (model, seed, settings).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "stx/engine/io/atomic_file.h"

namespace stx::engine {

using PngText = std::vector<std::pair<std::string, std::string>>;

// pixels: height rows of width * channels bytes (1 gray, 3 RGB, 4 RGBA). Keywords are 1-79 Latin-1
// characters; text is written as given. Throws Error naming the file on failure.
void write_png(const std::filesystem::path& path, const uint8_t* pixels, int width, int height, int channels,
               const PngText& text = {}, Overwrite overwrite = Overwrite::Replace);

// The same bytes in memory.
std::string encode_png(const uint8_t* pixels, int width, int height, int channels, const PngText& text = {});

}  // namespace stx::engine
