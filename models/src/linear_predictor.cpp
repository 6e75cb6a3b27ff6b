#include "stx/models/linear_predictor.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "stx/models/mulaw.h"

namespace stx::models {
namespace {

// The level guard (refit()): the last interval is this many times louder than the fit window's average...
constexpr double kRunawayRatio = 4.0;
// ...and louder than this (-26 dBFS), or it touched full scale. Real music starts notes that loud within a
// quarter of a window now and then; then the fit is merely more damped for one interval.
constexpr double kRunawayLevel = 0.05;
constexpr double kFullScale = 0.999;
// The guarded fit's ridge, over the normal one: coefficients shrink towards zero, which pulls the synthesis
// filter's poles inwards, away from the instability that feeds on the predictor's own output.
constexpr double kGuardRidgeFactor = 100.0;

// sum a[k] b[k] with four independent sums, so that the compiler may keep them in vector registers (a
// single running sum is one long dependency chain, and it may not reorder it).
double dot_portable(const double* a, const double* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s2) + (s1 + s3);
}

// The same with AVX2 and FMA, eight products a step: the fit's Cholesky factorisation is order^3 / 6 of
// these (22 M at order 512, every 256 samples), most of the expert's cost when decoding.
__attribute__((target("avx2,fma"))) double dot_avx2(const double* a, const double* b, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k), _mm256_loadu_pd(b + k), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k + 4), _mm256_loadu_pd(b + k + 4), s1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  double sum = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
  for (; k < n; ++k) sum += a[k] * b[k];
  return sum;
}

// Chosen once per process: every fit of a run, in training and in decoding, takes the same path.
double dot(const double* a, const double* b, int64_t n) {
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return avx2 ? dot_avx2(a, b, n) : dot_portable(a, b, n);
}

// Solves (A + lambda I) a = b for symmetric positive semi-definite A (n x n, row-major, only the upper
// triangle read) by Cholesky; false if the factor breaks down (then a is left alone).
bool solve_ridge(const double* matrix, int64_t stride, const double* b, int64_t n, double lambda,
                 std::vector<double>& factor, double* a) {
  factor.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      const double sum = matrix[i * stride + j] + (i == j ? lambda : 0.0) -
                         dot(factor.data() + i * n, factor.data() + j * n, i);
      if (i == j) {
        if (!(sum > 0.0)) return false;
        factor[static_cast<size_t>(i * n + i)] = std::sqrt(sum);
      } else {
        factor[static_cast<size_t>(j * n + i)] = sum / factor[static_cast<size_t>(i * n + i)];
      }
    }
  }
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {  // L y = b
    y[static_cast<size_t>(i)] = (b[i] - dot(factor.data() + i * n, y.data(), i)) / factor[static_cast<size_t>(i * n + i)];
  }
  for (int64_t i = n - 1; i >= 0; --i) {  // L^T a = y
    double sum = y[static_cast<size_t>(i)];
    for (int64_t k = i + 1; k < n; ++k) sum -= factor[static_cast<size_t>(k * n + i)] * a[k];
    a[i] = sum / factor[static_cast<size_t>(i * n + i)];
  }
  return true;
}

}  // namespace

LinearPredictor::LinearPredictor(const LinearExpertConfig& config) : config_(config) { reset(); }

void LinearPredictor::reset() {
  const auto order = static_cast<size_t>(std::max<int64_t>(1, config_.order));
  x_.clear();
  base_ = count_ = 0;
  // Until the first fit: the previous sample, a fair guess at 12 kHz, where most energy lies far below
  // the Nyquist frequency.
  coefficients_.assign(order, 0.0);
  coefficients_[0] = 1.0;
  abs_errors_.assign(static_cast<size_t>(std::max<int64_t>(1, config_.scale_window)), 0.0);
  errors_ = 0;
  row_.assign(static_cast<size_t>(std::max<int64_t>(0, config_.order) + 1), 0.0);
  guarded_ = false;
  predict();
}

void LinearPredictor::push_history(const uint8_t* bytes, int64_t count) {
  const int64_t end = count_ + count, first_fit = end - 2 * config_.refit_interval;
  for (int64_t i = 0; i < count; ++i) push(bytes[i], count_ + 1 >= first_fit);
}

void LinearPredictor::push(int byte, bool fit) {
  const float x = mulaw_amplitude_table()[static_cast<size_t>(byte & 255)];
  // The error of the prediction just made for this byte, into the scale's window.
  const double error = std::fabs(static_cast<double>(x) - mean_);
  const size_t slot = static_cast<size_t>(errors_ % static_cast<int64_t>(abs_errors_.size()));
  abs_errors_[slot] = error;
  errors_ += 1;

  x_.push_back(x);
  count_ += 1;
  // The fit's first row, phi(0, k) = sum over the window's t of x[t] x[t - k], kept up to date: the new
  // byte's products in, those of the byte that left the window out (2 (order + 1) products a byte, where
  // summing the window afresh at each fit costs window x (order + 1)).
  {
    const float* h = x_.data() - base_;
    const int64_t t = count_ - 1, gone = t - config_.window;
    const int64_t reach = std::min(config_.order, t);
    for (int64_t k = 0; k <= reach; ++k) row_[static_cast<size_t>(k)] += static_cast<double>(x) * h[t - k];
    if (gone >= 0) {
      const double xo = h[gone];
      const int64_t reach_gone = std::min(config_.order, gone);
      for (int64_t k = 0; k <= reach_gone; ++k) row_[static_cast<size_t>(k)] -= xo * h[gone - k];
    }
  }
  // Keep what a fit reads (the window and the order before it); trim in large steps, not every byte.
  const int64_t keep = config_.window + config_.order + 1;
  if (static_cast<int64_t>(x_.size()) > 2 * keep + 4096) {
    const int64_t drop = static_cast<int64_t>(x_.size()) - keep;
    x_.erase(x_.begin(), x_.begin() + drop);
    base_ += drop;
  }
  if (fit && count_ % config_.refit_interval == 0 && count_ >= 2 * config_.order) refit();
  predict();
}

void LinearPredictor::refit() {
  const int64_t p = config_.order;
  const int64_t t1 = count_, t0 = std::max<int64_t>(0, count_ - config_.window);
  const int64_t n = p + 1;
  // phi(j, k) = sum over t in [t0, t1) of x[t - j] x[t - k] (zero before the first byte): the first row
  // directly, the rest by phi(j + 1, k + 1) = phi(j, k) + x[t0 - 1 - j] x[t0 - 1 - k] - x[t1 - 1 - j] x[t1 - 1 - k].
  phi_.assign(static_cast<size_t>(n * n), 0.0);
  const float* x = x_.data() - base_;  // x[t] for base_ <= t < count_
  std::copy(row_.begin(), row_.end(), phi_.begin());
  for (int64_t j = 0; j < p; ++j) {
    for (int64_t k = j; k < p; ++k) {
      phi_[static_cast<size_t>((j + 1) * n + k + 1)] =
          phi_[static_cast<size_t>(j * n + k)] + sample(t0 - 1 - j) * sample(t0 - 1 - k) -
          sample(t1 - 1 - j) * sample(t1 - 1 - k);
    }
  }
  // The level guard: when the last interval is far louder than the window (or clips), the history is
  // running away, as a predictor fed its own draws can; the fit then takes a much larger ridge.
  double recent = 0.0, peak = 0.0;
  const int64_t interval_from = std::max<int64_t>(0, t1 - config_.refit_interval);
  for (int64_t t = interval_from; t < t1; ++t) {
    recent += static_cast<double>(x[t]) * x[t];
    peak = std::max(peak, static_cast<double>(std::fabs(x[t])));
  }
  const double recent_rms = std::sqrt(recent / static_cast<double>(t1 - interval_from));
  const double window_rms = std::sqrt(phi_[0] / static_cast<double>(t1 - t0));
  guarded_ = peak >= kFullScale || (recent_rms > kRunawayLevel && recent_rms > kRunawayRatio * window_rms);

  double trace = 0.0;
  for (int64_t j = 1; j <= p; ++j) trace += phi_[static_cast<size_t>(j * n + j)];
  const double lambda = config_.ridge * (guarded_ ? kGuardRidgeFactor : 1.0) * trace + 1e-12;
  // R a = r with R = phi(1.., 1..) and r = phi(0, 1..).
  rhs_.assign(phi_.begin() + 1, phi_.begin() + n);
  std::vector<double> solved(static_cast<size_t>(p));
  if (solve_ridge(phi_.data() + n + 1, n, rhs_.data(), p, lambda, factor_, solved.data())) {
    coefficients_ = std::move(solved);
  }
}

void LinearPredictor::predict() {
  double sum = 0.0;
  const int64_t taps = static_cast<int64_t>(coefficients_.size());
  const float* x = x_.data() - base_;
  const int64_t reach = std::min(taps, count_);
  for (int64_t k = 0; k < reach; ++k) sum += coefficients_[static_cast<size_t>(k)] * x[count_ - 1 - k];
  mean_ = std::clamp(sum, -1.0, 1.0);
  // Summed afresh (scale_window values) rather than kept as a running sum, whose rounding would remember
  // errors long gone: the scale is then a function of the last errors alone, as push_history needs.
  const int64_t known = std::min<int64_t>(errors_, static_cast<int64_t>(abs_errors_.size()));
  double error_sum = 0.0;
  for (int64_t k = 0; k < known; ++k) error_sum += abs_errors_[static_cast<size_t>(k)];
  scale_ = known > 0 ? std::max(kMinScale, error_sum / static_cast<double>(known)) : kInitialScale;
  predicted_byte_ = mulaw_byte_of(mean_);
}

float LinearPredictor::scale_feature() const { return static_cast<float>((std::log(scale_) + 6.0) / 3.0); }

void LinearPredictor::log_probs(float* out) const {
  const std::array<double, 257>& edges = mulaw_bin_edges();
  // tail[k] = 0.5 exp(-|edges[k] - mean| / scale): the Laplace mass beyond edge k on its own side.
  std::array<double, 257> tail{};
  for (size_t k = 0; k < 257; ++k) tail[k] = 0.5 * std::exp(-std::fabs(edges[k] - mean_) / scale_);
  constexpr double f = kProbabilityFloor;
  for (size_t k = 0; k < 256; ++k) {
    double p;
    if (edges[k + 1] <= mean_) {
      p = tail[k + 1] - tail[k];        // the bin lies below the mean
    } else if (edges[k] >= mean_) {
      p = tail[k] - tail[k + 1];        // above it
    } else {
      p = 1.0 - tail[k] - tail[k + 1];  // the mean lies inside
    }
    out[k] = static_cast<float>(std::log((1.0 - 256.0 * f) * std::max(p, 0.0) + f));
  }
}

}  // namespace stx::models
