// Whether audio sounds like music rather than noise or a drone, by its spectral peaks (stx-bench quality
// --samples, beside spectral flatness, which brown noise and any held chord score better than music):
//
// - the tonal peak ratio: the share of a frame's power within a few bins of spectral peaks standing well
//   above the local median of the spectrum. Instrument renderings score about 0.9; noise of any smooth
//   spectral envelope (white, brown, filtered) about 0.1 or less, since its bins never stand that far out.
// - note events per second: frames where strong partials appear that were not there a third of a second
//   earlier. Music starts notes about once or twice a second; a drone, however tonal, starts none, and
//   noise has no partials to start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stx::engine {

struct TonalPeakOptions {
  int frame = 4096;  // Hann-windowed, a power of two: 2.9 Hz bins at 12 kHz, fine enough to part partials
  int hop = 2048;
  int sample_rate = 12000;
  double silence_rms = 0.001;  // frames below -60 dBFS are left out of the ratio (but count as time)
  int median_half_width = 32;  // bins either side of the local median: wider than a partial's main lobe
  double peak_db = 15.0;       // a peak stands at least this far above the local median
  int peak_halo = 2;           // bins either side of a peak that count as its power (the Hann main lobe)
  double strong_db = 20.0;     // a partial within this of the frame's strongest peak is strong
  double onset_lag_seconds = 0.34;  // a new partial had no peak near it for this long (whole hops)
  double drift_fraction = 0.02;     // "near": within this fraction of its frequency (vibrato is about 1%)
  double lowest_hz = 60.0;          // no peaks below: a steep envelope's lowest bins are not partials
};

struct TonalPeaks {
  std::vector<double> frame_ratios;  // tonal peak ratio of each non-silent frame
  int64_t note_events = 0;           // frames where a strong partial appears, new since onset_lag_seconds
  double seconds = 0;                // the audio's length
};

// Throws std::invalid_argument for a frame that is not a power of two >= 64, a hop < 1, or a rate < 1.
TonalPeaks tonal_peaks(const float* samples, size_t count, const TonalPeakOptions& options = {});
// The same for 12 kHz mu-law bytes.
TonalPeaks tonal_peaks_mulaw(const uint8_t* bytes, size_t count, const TonalPeakOptions& options = {});

}  // namespace stx::engine
