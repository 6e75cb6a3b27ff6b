// 8-bit mu-law (mu = 255) as the models read it: each byte's amplitude, and where the encoder's bins begin.
// The same rule as engine/mulaw.h's encoder and decoder (which the engine's torch-free readers use):
//   encode: y = sign(x) ln(1 + 255|x|) / ln(256), byte = round((y + 1) / 2 * 255), halves away from zero
//   decode: y = byte / 255 * 2 - 1, x = sign(y) (256^|y| - 1) / 255
#pragma once

#include <array>
#include <cstdint>

namespace stx::models {

// The amplitude of each byte in [-1, 1].
const std::array<float, 256>& mulaw_amplitude_table();
// edges[k], 1 <= k <= 255: the amplitude where the encoder's output changes from byte k - 1 to byte k;
// edges[0] = -infinity and edges[256] = +infinity, so byte k holds the amplitudes [edges[k], edges[k + 1]).
const std::array<double, 257>& mulaw_bin_edges();
// The byte the encoder gives amplitude x (clamped to [-1, 1]; NaN counts as silence).
int mulaw_byte_of(double x);

}  // namespace stx::models
