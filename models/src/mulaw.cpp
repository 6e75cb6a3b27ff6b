#include "stx/models/mulaw.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stx::models {
namespace {

// The decoder's curve: companded y in [-1, 1] to amplitude.
double expand(double y) { return std::copysign(std::expm1(std::fabs(y) * std::log(256.0)) / 255.0, y); }

}  // namespace

const std::array<float, 256>& mulaw_amplitude_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) {
      // The clamp keeps rounding (expm1(ln 256) / 255 can be 1 + 1 ulp) inside the sample range.
      t[static_cast<size_t>(b)] = static_cast<float>(std::clamp(expand(b / 255.0 * 2.0 - 1.0), -1.0, 1.0));
    }
    return t;
  }();
  return table;
}

const std::array<double, 257>& mulaw_bin_edges() {
  static const std::array<double, 257> edges = [] {
    std::array<double, 257> e{};
    e[0] = -std::numeric_limits<double>::infinity();
    e[256] = std::numeric_limits<double>::infinity();
    // The encoder's scaled value (y + 1) / 2 * 255 rounds to k from k - 0.5 on.
    for (int k = 1; k < 256; ++k) e[static_cast<size_t>(k)] = expand((k - 0.5) / 127.5 - 1.0);
    return e;
  }();
  return edges;
}

uint8_t mulaw_encode(double x) {
  if (std::isnan(x)) x = 0.0;  // a NaN sample is treated as silence rather than undefined behaviour
  x = std::clamp(x, -1.0, 1.0);
  const double y = std::copysign(std::log1p(255.0 * std::fabs(x)) / std::log(256.0), x);
  return static_cast<uint8_t>(std::clamp(std::lround((y + 1.0) * 127.5), 0L, 255L));
}

float mulaw_decode(uint8_t byte) { return mulaw_amplitude_table()[byte]; }

}  // namespace stx::models
