#include "stx/engine/mulaw.h"

#include <algorithm>
#include <cmath>

namespace stx::engine {

namespace {
constexpr float kMu = 255.0f;
const float kLogOnePlusMu = std::log(1.0f + kMu);  // ln(256)
}  // namespace

uint8_t mulaw_encode(float x) {
  if (std::isnan(x)) x = 0.0f;  // a NaN sample is treated as silence rather than undefined behaviour
  x = std::clamp(x, -1.0f, 1.0f);
  const float y = std::copysign(std::log1p(kMu * std::fabs(x)) / kLogOnePlusMu, x);
  const float scaled = (y + 1.0f) * 0.5f * 255.0f;
  return static_cast<uint8_t>(std::clamp(std::lround(scaled), 0l, 255l));
}

float mulaw_decode(uint8_t byte) {
  const float y = static_cast<float>(byte) / 255.0f * 2.0f - 1.0f;
  // The clamp keeps float rounding (expm1(ln 256) / 255 can be 1 + 1 ulp) inside the sample range.
  return std::clamp(std::copysign(std::expm1(std::fabs(y) * kLogOnePlusMu) / kMu, y), -1.0f, 1.0f);
}

}  // namespace stx::engine
