// The matrix products of incremental decoding: a few rows (one per sample being generated) times a
// weight matrix, plus a bias:
//
//   y[r][0:out] = bias[0:out] + sum_i x[r][i] * weight_t[i][0:out],   r < rows
//
// weight_t is the transpose of a torch Linear weight ([in, out], row-major), so each weight row is read
// once, contiguously, for all rows together: with few rows the product is bound by reading the weights,
// and LibTorch's per-call overhead (about 5 us) would cost more than the arithmetic.
//
// CPU only, float32, threaded over column tiles; the instruction set is chosen like the attention kernels'.
#pragma once

#include <cstdint>

#include "stx/kernels/error.h"

namespace stx::kernels {

struct SmallLinearParams {
  const float* x = nullptr;         // [rows, in], row stride x_stride
  const float* weight_t = nullptr;  // [in, out], contiguous
  const float* bias = nullptr;      // [out], or null for none
  float* y = nullptr;               // [rows, out], row stride y_stride; must not overlap x
  int64_t rows = 0, in = 0, out = 0;
  int64_t x_stride = 0, y_stride = 0;  // 0 means in and out
};

void small_linear(const SmallLinearParams& p);

}  // namespace stx::kernels
