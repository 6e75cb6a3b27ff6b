// The radix-2 FFT that the spectral measures share (spectral_flatness.cpp, tonal_peaks.cpp).
#pragma once

#include <complex>
#include <cstddef>
#include <utility>
#include <vector>

namespace stx::engine::detail {

// exp(-2 pi i k / n) for k < n / 2: what fft() multiplies by.
inline std::vector<std::complex<double>> fft_twiddles(size_t n) {
  constexpr double kPi = 3.14159265358979323846;
  std::vector<std::complex<double>> twiddles(n / 2);
  for (size_t k = 0; k < n / 2; ++k) twiddles[k] = std::polar(1.0, -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n));
  return twiddles;
}

// In-place iterative radix-2 FFT of a power-of-two length, with fft_twiddles(x.size()).
inline void fft(std::vector<std::complex<double>>& x, const std::vector<std::complex<double>>& twiddles) {
  const size_t n = x.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(x[i], x[j]);
  }
  for (size_t length = 2; length <= n; length <<= 1) {
    const size_t stride = n / length;
    for (size_t start = 0; start < n; start += length) {
      for (size_t k = 0; k < length / 2; ++k) {
        const std::complex<double> even = x[start + k], odd = x[start + k + length / 2] * twiddles[k * stride];
        x[start + k] = even + odd;
        x[start + k + length / 2] = even - odd;
      }
    }
  }
}

}  // namespace stx::engine::detail
