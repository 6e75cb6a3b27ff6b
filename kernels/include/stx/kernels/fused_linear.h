// One layer of a decode step's small products, fused: a few rows (one per sample being generated) through
// an optional layer norm, a linear layer in torch's layout, and an optional GELU or residual add:
//
//   n[r]    = norm ? (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * gamma + beta : x[r]
//   y[r][c] = residual[r][c] + act(bias[c] + sum_i n[r][i] * W[c][i]),    r < rows, c < out
//
// with act the identity or the paper's GELU (activation.h: x * sigmoid(1.702 x)), and the residual
// optional. As LibTorch ops this is up to five launches (norm, addmm, activation, add, and a copy); a
// decode step of the bundled audio model runs four of these a layer, so fused it spends a launch on each.
// W is [out, in] row-major, the torch Linear weight as it is, fp32; the arithmetic is fp32.
//
// CPU and CUDA (a warp an output column, the normalised rows in shared memory, eight rows at a time).
#pragma once

#include <cstdint>

#include "stx/kernels/attention.h"  // Device

namespace stx::kernels {

enum class Activation : int { none = 0, gelu = 1 };

struct FusedLinearParams {
  const float* x = nullptr;      // [rows, in], row stride x_stride (0: in)
  const float* gamma = nullptr;  // [in] with beta: the layer norm before the product; null: none
  const float* beta = nullptr;
  float eps = 1e-5f;
  const float* weight = nullptr;    // [out, in]
  const float* bias = nullptr;      // [out], or null
  const float* residual = nullptr;  // [rows, out] (row stride y_stride), or null; must not overlap y
  float* y = nullptr;               // [rows, out], row stride y_stride (0: out); must not overlap x
  int64_t rows = 0, in = 0, out = 0;
  int64_t x_stride = 0, y_stride = 0;
  Activation activation = Activation::none;
  Device device = Device::cpu;
  void* stream = nullptr;
};

// Rows the CUDA kernel keeps in shared memory at once, and the widest input it takes.
constexpr int64_t kFusedLinearRowChunk = 8;
constexpr int64_t kFusedLinearMaxIn = 1024;

void fused_linear(const FusedLinearParams& p);

}  // namespace stx::kernels
