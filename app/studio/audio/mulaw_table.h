// The 256 mu-law bytes decoded to [-1, 1] once: the waveform and the player decode every byte they show or
// play, and a table lookup keeps the audio callback free of maths.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stx/engine/mulaw.h"

namespace stx::studio {

inline const std::array<float, 256>& mulaw_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = stx::engine::mulaw_decode(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

}  // namespace stx::studio
