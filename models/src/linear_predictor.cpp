#include "stx/models/linear_predictor.h"

#include <algorithm>
#include <cmath>

#include "ridge_solver.h"
#include "stx/models/mulaw.h"

namespace stx::models {
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
  phi_.resize(static_cast<size_t>(n * n));
  const float* x = x_.data() - base_;  // x[t] for base_ <= t < count_
  std::copy(row_.begin(), row_.end(), phi_.begin());
  // Both triangles: the solver reads the lower one by rows.
  for (int64_t j = 0; j < p; ++j) {
    const double first_j = sample(t0 - 1 - j), last_j = sample(t1 - 1 - j);
    for (int64_t k = j; k < p; ++k) {
      const double v = phi_[static_cast<size_t>(j * n + k)] + first_j * sample(t0 - 1 - k) - last_j * sample(t1 - 1 - k);
      phi_[static_cast<size_t>((j + 1) * n + k + 1)] = v;
      phi_[static_cast<size_t>((k + 1) * n + j + 1)] = v;
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
  predicted_byte_ = mulaw_encode(mean_);
}

float LinearPredictor::scale_feature() const {
  return static_cast<float>((std::log(scale_) + kFeatureShift) / kFeatureDivisor);
}

double LinearPredictor::distribution_scale() const {
  const std::array<double, 257>& edges = mulaw_bin_edges();
  // The outermost bins reach to infinity: their inner neighbours' widths stand in.
  const auto bin = static_cast<size_t>(std::clamp(predicted_byte_, 1, 254));
  return std::max(scale_, kScaleFloorBins * (edges[bin + 1] - edges[bin]));
}

void LinearPredictor::log_probs(float* out) const {
  const std::array<double, 257>& edges = mulaw_bin_edges();
  const double scale = distribution_scale();
  // tail[k] = 0.5 exp(-|edges[k] - mean| / scale): the Laplace mass beyond edge k on its own side.
  std::array<double, 257> tail{};
  for (size_t k = 0; k < 257; ++k) tail[k] = 0.5 * std::exp(-std::fabs(edges[k] - mean_) / scale);
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
