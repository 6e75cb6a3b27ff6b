#include "stx/engine/measures/spectral_flatness.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>
#include <string>

#include "fft.h"
#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

constexpr double kPi = 3.14159265358979323846;

}  // namespace

std::vector<double> frame_flatness(const float* samples, size_t count, const FlatnessOptions& options) {
  const int n = options.frame;
  if (n < 4 || (n & (n - 1)) != 0) {
    throw std::invalid_argument("spectral flatness: frame must be a power of two >= 4, got " +
                                std::to_string(n));
  }
  if (options.hop < 1) throw std::invalid_argument("spectral flatness: hop must be at least 1");
  std::vector<double> window(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) window[i] = 0.5 - 0.5 * std::cos(2.0 * kPi * i / n);  // periodic Hann
  const std::vector<std::complex<double>> twiddles = detail::fft_twiddles(static_cast<size_t>(n));

  std::vector<double> out;
  std::vector<std::complex<double>> x(static_cast<size_t>(n));
  const double silence_energy = options.silence_rms * options.silence_rms * n;
  for (size_t start = 0; start + static_cast<size_t>(n) <= count; start += static_cast<size_t>(options.hop)) {
    double energy = 0.0;
    for (int i = 0; i < n; ++i) energy += static_cast<double>(samples[start + i]) * samples[start + i];
    if (!(energy >= silence_energy)) continue;  // silence, or a NaN in the frame
    for (int i = 0; i < n; ++i) x[i] = samples[start + i] * window[i];
    detail::fft(x, twiddles);
    // Bins 0..n/2 of the real signal's spectrum. A bin of exactly zero power would make the geometric mean
    // zero whatever the rest: each bin's power is floored at 1e-12 of the frame's mean power.
    const int bins = n / 2 + 1;
    double sum = 0.0;
    for (int k = 0; k < bins; ++k) sum += std::norm(x[k]);
    const double mean = sum / bins, floor = mean * 1e-12;
    double log_sum = 0.0;
    for (int k = 0; k < bins; ++k) log_sum += std::log(std::max(std::norm(x[k]), floor));
    out.push_back(std::exp(log_sum / bins) / mean);
  }
  return out;
}

std::vector<double> frame_flatness_mulaw(const uint8_t* bytes, size_t count, const FlatnessOptions& options) {
  std::vector<float> samples(count);
  for (size_t i = 0; i < count; ++i) samples[i] = mulaw_decode(bytes[i]);
  return frame_flatness(samples.data(), count, options);
}

double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  if (values.size() % 2 == 1) return values[middle];
  const double upper = values[middle];
  return (upper + *std::max_element(values.begin(), values.begin() + middle)) / 2.0;
}

}  // namespace stx::engine
