#pragma once
// 8-bit mu-law companding (mu = 255), the byte encoding of audio samples (paper-notes: "8-bit mu-law, mono").
//   encode: clamp x to [-1, 1], y = sign(x) ln(1 + 255|x|) / ln(256), byte = round((y + 1) / 2 * 255)
//   decode: y = byte / 255 * 2 - 1, x = sign(y) (256^|y| - 1) / 255
// Silence (0.0) encodes to byte 128: (0 + 1) / 2 * 255 = 127.5 rounds half away from zero. decode(128) is
// about +8.6e-5, not exactly 0, because no byte maps to y = 0. A NaN sample encodes like silence.
#include <cstdint>

namespace stx::engine {

uint8_t mulaw_encode(float x);
float mulaw_decode(uint8_t byte);

}  // namespace stx::engine
