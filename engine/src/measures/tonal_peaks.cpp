#include "stx/engine/measures/tonal_peaks.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fft.h"
#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

constexpr double kPi = 3.14159265358979323846;
// Bins within which a weaker peak beside a stronger one is its shoulder (the Hann main lobe is 4 bins wide).
constexpr int kShoulderBins = 3;

// The peaks of one power spectrum: local maxima at least peak_db above the median of the bins around them.
std::vector<int> spectral_peaks(const std::vector<double>& power, const TonalPeakOptions& o) {
  const int bins = static_cast<int>(power.size());
  const double above = std::pow(10.0, o.peak_db / 10.0);
  std::vector<int> peaks;
  std::vector<double> neighbourhood;
  const int first = std::max(1, static_cast<int>(o.lowest_hz * o.frame / o.sample_rate));
  for (int k = first; k + 1 < bins; ++k) {
    if (!(power[k] > power[k - 1] && power[k] >= power[k + 1])) continue;
    // Wider with frequency, so that a steep envelope (brown noise falls 6 dB an octave in amplitude) does
    // not lift the low bins above their neighbourhood's median.
    const int half = std::max(o.median_half_width, k / 8);
    const int lo = std::max(0, k - half), hi = std::min(bins, k + half + 1);
    neighbourhood.assign(power.begin() + lo, power.begin() + hi);
    const size_t middle = neighbourhood.size() / 2;
    std::nth_element(neighbourhood.begin(), neighbourhood.begin() + static_cast<std::ptrdiff_t>(middle),
                     neighbourhood.end());
    if (power[k] >= above * neighbourhood[middle]) peaks.push_back(k);
  }
  return peaks;
}

}  // namespace

TonalPeaks tonal_peaks(const float* samples, size_t count, const TonalPeakOptions& o) {
  if (o.frame < 64 || (o.frame & (o.frame - 1)) != 0) {
    throw std::invalid_argument("tonal peaks: frame must be a power of two >= 64, got " + std::to_string(o.frame));
  }
  if (o.hop < 1 || o.sample_rate < 1) throw std::invalid_argument("tonal peaks: hop and sample rate must be >= 1");
  const auto n = static_cast<size_t>(o.frame);
  std::vector<double> window(n);
  for (size_t i = 0; i < n; ++i) window[i] = 0.5 - 0.5 * std::cos(2.0 * kPi * static_cast<double>(i) / static_cast<double>(n));
  const auto twiddles = detail::fft_twiddles(n);
  const int lag = std::max(1, static_cast<int>(std::lround(o.onset_lag_seconds * o.sample_rate / o.hop)));
  const double strong = std::pow(10.0, -o.strong_db / 10.0);
  const double silence_energy = o.silence_rms * o.silence_rms * static_cast<double>(n);

  TonalPeaks out;
  out.seconds = static_cast<double>(count) / o.sample_rate;
  // Per frame: the bins near enough to one of its peaks that a partial there is not new (empty: silent).
  std::vector<std::vector<char>> had_peak;
  std::vector<std::complex<double>> x(n);
  std::vector<double> power(n / 2 + 1);
  for (size_t start = 0; start + n <= count; start += static_cast<size_t>(o.hop)) {
    double energy = 0.0;
    for (size_t i = 0; i < n; ++i) energy += static_cast<double>(samples[start + i]) * samples[start + i];
    std::vector<char> near_peak, near_for_later;
    bool event = false;
    if (energy >= silence_energy) {
      for (size_t i = 0; i < n; ++i) x[i] = samples[start + i] * window[i];
      detail::fft(x, twiddles);
      double total = 0.0;
      for (size_t k = 0; k < power.size(); ++k) total += power[k] = std::norm(x[k]);
      const std::vector<int> peaks = spectral_peaks(power, o);
      near_peak.assign(power.size(), 0);
      near_for_later.assign(power.size(), 0);
      const int last_bin = static_cast<int>(power.size()) - 1;
      double strongest = 0.0;
      for (int k : peaks) {
        strongest = std::max(strongest, power[static_cast<size_t>(k)]);
        for (int j = std::max(0, k - o.peak_halo); j <= std::min(last_bin, k + o.peak_halo); ++j)
          near_peak[static_cast<size_t>(j)] = 1;
        // A partial that moves by vibrato (about 1% of its frequency) is the same partial.
        const int drift = std::max(o.peak_halo, static_cast<int>(k * o.drift_fraction));
        for (int j = std::max(0, k - drift); j <= std::min(last_bin, k + drift); ++j)
          near_for_later[static_cast<size_t>(j)] = 1;
      }
      double tonal = 0.0;
      for (size_t k = 0; k < power.size(); ++k) tonal += near_peak[k] ? power[k] : 0.0;
      out.frame_ratios.push_back(total > 0 ? tonal / total : 0.0);
      // A strong partial with no peak near it in any frame of the last onset_lag_seconds is a new one; the
      // first frames have nothing to compare with.
      const size_t frame_index = had_peak.size();
      if (frame_index >= static_cast<size_t>(lag)) {
        for (int k : peaks) {
          if (power[static_cast<size_t>(k)] < strong * strongest) continue;
          // A shoulder of a stronger peak beside it is that partial, not a new one (tremolo makes them).
          bool shoulder = false;
          for (int p : peaks) {
            shoulder = shoulder || (p != k && std::abs(p - k) <= kShoulderBins &&
                                    power[static_cast<size_t>(p)] > power[static_cast<size_t>(k)]);
          }
          if (shoulder) continue;
          bool seen = false;
          for (int back = 1; back <= lag && !seen; ++back) {
            const std::vector<char>& before = had_peak[frame_index - static_cast<size_t>(back)];
            seen = !before.empty() && before[static_cast<size_t>(k)];
          }
          if (!seen) {
            event = true;
            break;
          }
        }
      }
    }
    if (event) out.note_events += 1;
    had_peak.push_back(std::move(near_for_later));
  }
  return out;
}

TonalPeaks tonal_peaks_mulaw(const uint8_t* bytes, size_t count, const TonalPeakOptions& options) {
  std::vector<float> samples(count);
  for (size_t i = 0; i < count; ++i) samples[i] = mulaw_decode(bytes[i]);
  return tonal_peaks(samples.data(), count, options);
}

}  // namespace stx::engine
