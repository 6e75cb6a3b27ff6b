// 8-bit mu-law (mu = 255), the byte encoding of audio (paper-notes: "8-bit mu-law, mono"): the one codec of
// the project. The datasets encode with it, the models read its amplitudes and bin edges, the exporters and
// the studio decode with it (through stx/engine/mulaw.h). Torch-free: the library stx_mulaw.
//   encode: clamp x to [-1, 1], y = sign(x) ln(1 + 255|x|) / ln(256), byte = round((y + 1) / 2 * 255),
//           halves away from zero, so silence (0.0) is byte 128; a NaN sample encodes like silence
//   decode: y = byte / 255 * 2 - 1, x = sign(y) (256^|y| - 1) / 255, clamped to [-1, 1]; decode(128) is about
//           +8.6e-5, not exactly 0, because no byte maps to y = 0
#pragma once

#include <array>
#include <cstdint>

namespace stx::models {

// The byte the encoder gives amplitude x.
uint8_t mulaw_encode(double x);
// The amplitude of byte b in [-1, 1]: mulaw_amplitude_table()[b].
float mulaw_decode(uint8_t byte);
// The amplitude of each byte, computed once.
const std::array<float, 256>& mulaw_amplitude_table();
// edges[k], 1 <= k <= 255: the amplitude where the encoder's output changes from byte k - 1 to byte k;
// edges[0] = -infinity and edges[256] = +infinity, so byte k holds the amplitudes [edges[k], edges[k + 1]).
const std::array<double, 257>& mulaw_bin_edges();

}  // namespace stx::models
