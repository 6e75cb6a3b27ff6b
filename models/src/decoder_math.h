// Private to the decoder (cpu_decoder.cpp, cpu_decoder_shared_step.cpp): the per-row arithmetic of a step that
// is not one of the kernels, written once so that every way of running a step computes the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "stx/kernels/small_linear.h"

namespace stx::models::detail {

// Sum of f(x[i]) over a row in double, in kLanes independent partial sums: one running sum made every
// addition wait for the last (about 4 cycles each), and each thread of a decoder step normalises every
// row nine times a step (5% of a step of 2 samples in perf). Independent lanes vectorise without
// reordering anything the compiler must keep.
template <class F>
double sum_in_lanes(const float* x, int64_t d, F f) {
  constexpr int64_t kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) lanes[k] += f(x[i + k]);
  }
  for (; i < d; ++i) lanes[i % kLanes] += f(x[i]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// torch's LayerNorm: biased variance, eps 1e-5, one row of width d per sample.
inline void layer_norm(const float* x, float* y, int64_t rows, int64_t d, const std::vector<float>& gamma,
                       const std::vector<float>& beta) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    const double mean =
        sum_in_lanes(xr, d, [](float v) { return static_cast<double>(v); }) / static_cast<double>(d);
    const double var = sum_in_lanes(xr, d, [mean](float v) { return (v - mean) * (v - mean); });
    const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(d) + 1e-5));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * inv * gamma[i] + beta[i];
  }
}

// y = x W^T + bias over `rows` rows, or only part `part` of `parts` of its columns
// (stx::kernels::small_linear_columns), for threads that share the product.
template <class LinearWeights>
void linear(const float* x, int64_t rows, const LinearWeights& layer, float* y, int part = 0, int parts = 1) {
  kernels::SmallLinearParams p;
  p.x = x;
  if (layer.weights_half.empty()) {
    p.weights = layer.weights.data();
  } else {
    p.weights = layer.weights_half.data();
    p.weight_dtype = kernels::DType::f16;
  }
  p.bias = layer.bias.data();
  p.y = y;
  p.rows = rows;
  p.in = layer.in;
  p.out = layer.out;
  p.part = part;
  p.parts = parts;
  kernels::small_linear(p);
}

}  // namespace stx::models::detail
