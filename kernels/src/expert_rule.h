// The arithmetic of linear_expert_predict and linear_expert_push (stx/kernels/linear_expert.h) that the CPU
// loop and the CUDA kernels share, one value at a time, as LinearPredictor computes it on the host.
#pragma once

#include <cstdint>

#include "cuda/mma_fragments.h"  // STX_HOST_DEVICE
#include "stx/kernels/linear_expert.h"

#if !defined(__CUDA_ARCH__)
#include <algorithm>
#include <cmath>
#endif

namespace stx::kernels::expert {

#if defined(__CUDA_ARCH__)
STX_HOST_DEVICE double exp_d(double x) { return exp(x); }
STX_HOST_DEVICE double log_d(double x) { return log(x); }
STX_HOST_DEVICE double log1p_d(double x) { return log1p(x); }
STX_HOST_DEVICE long long round_half_away(double x) { return llround(x); }
#else
STX_HOST_DEVICE double exp_d(double x) { return std::exp(x); }
STX_HOST_DEVICE double log_d(double x) { return std::log(x); }
STX_HOST_DEVICE double log1p_d(double x) { return std::log1p(x); }
STX_HOST_DEVICE long long round_half_away(double x) { return std::llround(x); }
#endif

STX_HOST_DEVICE double clamp_d(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

// The mu-law byte of amplitude x (models' mulaw_encode; x is already clamped to [-1, 1]).
STX_HOST_DEVICE int64_t encode(double x) {
  const double magnitude = log1p_d(255.0 * (x < 0 ? -x : x)) / log_d(256.0);
  const double y = x < 0 ? -magnitude : magnitude;
  const long long b = round_half_away((y + 1.0) * 127.5);
  return b < 0 ? 0 : (b > 255 ? 255 : b);
}

// The scale from the sum of the errors known and how many are known.
STX_HOST_DEVICE double scale_of(const ExpertStepParams& p, double error_sum, int64_t known) {
  if (known <= 0) return p.initial_scale;
  const double s = error_sum / static_cast<double>(known);
  return s > p.min_scale ? s : p.min_scale;
}

// log p of byte k under Laplace(mean, spread) over its bin, with the floor.
STX_HOST_DEVICE float log_prob(const ExpertStepParams& p, int k, double mean, double spread) {
  const double lo = p.edges[k], hi = p.edges[k + 1];
  const double tail_lo = 0.5 * exp_d(-(lo > mean ? lo - mean : mean - lo) / spread);
  const double tail_hi = 0.5 * exp_d(-(hi > mean ? hi - mean : mean - hi) / spread);
  double q;
  if (hi <= mean) {
    q = tail_hi - tail_lo;  // the bin lies below the mean
  } else if (lo >= mean) {
    q = tail_lo - tail_hi;  // above it
  } else {
    q = 1.0 - tail_lo - tail_hi;  // the mean lies inside
  }
  const double f = p.probability_floor;
  return static_cast<float>(log_d((1.0 - 256.0 * f) * (q > 0.0 ? q : 0.0) + f));
}

// What a sample's prediction gives once its mean and scale are known: byte, feature, spread.
struct Prediction {
  int64_t byte;
  float feature;
  double spread;
};

STX_HOST_DEVICE Prediction prediction_of(const ExpertStepParams& p, double mean, double scale) {
  Prediction out;
  out.byte = encode(mean);
  out.feature = static_cast<float>((log_d(scale) + p.feature_shift) / p.feature_divisor);
  const double floor = p.half_widths[out.byte];
  out.spread = scale > floor ? scale : floor;
  return out;
}

}  // namespace stx::kernels::expert
