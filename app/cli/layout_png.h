// The connectivity matrix of a layer drawn as a PNG, like the paper's Figure 3: row i, column j is dark
// when position i attends to j. Above 1024 positions each pixel covers a square of positions and its
// shade is the fraction attended (sampled on the square's first row).
#pragma once

#include <cstdint>
#include <string>

#include "stx/engine/pattern_view.h"

namespace stx::cli {

// head < 0 draws the union of every head. query >= 0 marks that row in red. An existing file is replaced only
// when `replace`; otherwise engine::Error says so.
void write_layout_png(const std::string& path, const engine::LayerPatternSpec& layer, int head, int64_t query,
                      bool replace);

}  // namespace stx::cli
