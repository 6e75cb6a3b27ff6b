// The matrix products of incremental decoding: a few rows (one per sample being generated) times a
// weight matrix, plus a bias:
//
//   y[r][0:out] = bias[0:out] + sum_i x[r][i] * weight_t[i][0:out],   r < rows
//
// weight_t is the transpose of a torch Linear weight ([in, out], row-major), so each weight row is read
// once, contiguously, for all rows together: with few rows the product is bound by reading the weights,
// and LibTorch's per-call overhead (about 5 us) would cost more than the arithmetic.
//
// CPU only, float32 arithmetic, threaded over column tiles; the instruction set is chosen like the
// attention kernels'. The weights may be IEEE halves (weight_dtype f16), widened in registers: one sample's
// product is bound by reading them, and halves are half the bytes. Widening is exact, so weights that are
// halves already (a model exported in fp16) give the same bits either way.
#pragma once

#include <cstdint>
#include <utility>

#include "stx/kernels/attention.h"  // DType
#include "stx/kernels/error.h"

namespace stx::kernels {

struct SmallLinearParams {
  const float* x = nullptr;         // [rows, in], row stride x_stride
  const void* weight_t = nullptr;   // [in, out], contiguous, of weight_dtype
  DType weight_dtype = DType::f32;   // f32, or f16 (IEEE half bits, as kernels::convert_to_half writes them)
  const float* bias = nullptr;      // [out], or null for none
  float* y = nullptr;               // [rows, out], row stride y_stride; must not overlap x
  int64_t rows = 0, in = 0, out = 0;
  int64_t x_stride = 0, y_stride = 0;  // 0 means in and out
  // For threads already running together (one parallel region around a whole decoder step): this call
  // computes only part `part` of `parts`, the columns small_linear_columns(out, part, parts), and starts
  // no threads of its own. The parts write every column exactly once between them, and a column's
  // arithmetic does not depend on the split, so the result is bit for bit that of one call.
  int part = 0, parts = 1;
};

void small_linear(const SmallLinearParams& p);

// The columns [first, second) of a product with `out` columns that part `part` of `parts` computes:
// contiguous whole vectors, as evenly as they divide (the earlier parts take the extra one), the last part
// also taking the columns that make no whole vector. Depends on the instruction set in use.
std::pair<int64_t, int64_t> small_linear_columns(int64_t out, int part, int parts);

}  // namespace stx::kernels
