#include "layout_png.h"

#include <algorithm>
#include <vector>

#include "stx/engine/layout_report.h"
#include "stx/engine/export/png_writer.h"

namespace stx::cli {

void write_layout_png(const std::string& path, const engine::LayerPatternSpec& layer, int head, int64_t query,
                      bool replace) {
  constexpr int64_t kMaxPixels = 1024;
  const int64_t n = layer.n;
  const int64_t size = std::min(n, kMaxPixels);
  std::vector<uint8_t> rgb(static_cast<size_t>(size * size * 3), 255);
  std::vector<double> attended(static_cast<size_t>(size));
  const int64_t query_pixel = query >= 0 ? query * size / n : -1;
  for (int64_t y = 0; y < size; ++y) {
    const int64_t i = y * n / size;  // the first position the pixel row covers
    std::fill(attended.begin(), attended.end(), 0.0);
    // Per position first (a position counts once over the heads), then binned into pixels.
    const std::vector<uint8_t> row = engine::connectivity_row(layer, head, i);
    for (int64_t j = 0; j <= i; ++j) attended[static_cast<size_t>(j * size / n)] += row[static_cast<size_t>(j)];
    for (int64_t x = 0; x < size; ++x) {
      const int64_t first = (x * n + size - 1) / size, last = ((x + 1) * n + size - 1) / size;  // [first, last)
      uint8_t* px = &rgb[static_cast<size_t>((y * size + x) * 3)];
      if (first > i) {  // the future: never attended, drawn light grey so causality is visible
        px[0] = px[1] = px[2] = 236;
        continue;
      }
      const double fraction = attended[static_cast<size_t>(x)] / static_cast<double>(std::max<int64_t>(1, last - first));
      const double shade = std::min(1.0, fraction);
      const bool marked = y == query_pixel;
      // White -> dark blue by the fraction attended; the query row in red.
      px[0] = static_cast<uint8_t>(255 - shade * (marked ? 35 : 225));
      px[1] = static_cast<uint8_t>(255 - shade * (marked ? 215 : 185));
      px[2] = static_cast<uint8_t>(255 - shade * (marked ? 215 : 95));
      if (marked && shade == 0) px[0] = 255, px[1] = px[2] = 225;
    }
  }
  engine::write_png(path, rgb.data(), static_cast<int>(size), static_cast<int>(size), 3,
                    {{"Software", "stx layout"}, {"Comment", "connectivity matrix: row i attends column j"}},
                    replace ? engine::Overwrite::Replace : engine::Overwrite::Refuse);
}

}  // namespace stx::cli
