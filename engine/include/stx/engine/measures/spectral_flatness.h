// How tonal a piece of audio is: the spectral flatness of its frames (Wiener entropy), the geometric over
// the arithmetic mean of a frame's power spectrum. A pure tone is near 0, a piano recording a few
// thousandths, white noise about 0.4-0.6 (a periodogram's own scatter keeps it below 1). Used to judge
// whether generated audio has partials, beside bits/byte (stx-bench quality --samples).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stx::engine {

struct FlatnessOptions {
  int frame = 1024;  // samples per frame, a power of two; Hann-windowed
  int hop = 512;
  // Frames whose RMS is below this (full scale 1) are silence and left out: their spectrum is rounding.
  // 0.001 is -60 dBFS.
  double silence_rms = 0.001;
};

// The flatness of each non-silent whole frame of `samples` (full scale +-1), in order.
std::vector<double> frame_flatness(const float* samples, size_t count, const FlatnessOptions& options = {});

// The same for 12 kHz mu-law bytes, as the audio models read and write them.
std::vector<double> frame_flatness_mulaw(const uint8_t* bytes, size_t count,
                                         const FlatnessOptions& options = {});

// The median of `values` (the mean of the middle two for an even count); NaN when empty.
double median(std::vector<double> values);

}  // namespace stx::engine
