// The matrix products of incremental decoding: a few rows (one per sample being generated) times a
// weight matrix, plus a bias:
//
//   y[r][0:out] = bias[0:out] + sum_i x[r][i] * W[i][0:out],   r < rows
//
// W[in, out] is the transpose of a torch Linear weight, handed over packed in panels of 16 columns
// (pack_weight_panels): panel p holds columns 16p..16p+15 of every row i, one panel after another. A
// register tile of columns then reads each of its panels as one contiguous run, which the hardware
// prefetchers follow; rows of the plain [in, out] layout were `out` elements apart and a tile read a
// short piece of each (one sample's products took a fifth longer, docs/benchmarks.md). Each weight is read
// once for all rows together: with few rows the product is bound by reading the weights, and LibTorch's
// per-call overhead (about 5 us) would cost more than the arithmetic.
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
  const void* weights = nullptr;    // W packed by pack_weight_panels, of weight_dtype
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

// Columns per panel of the packed weights. Every instruction set's vectors (4, 8 or 16 floats) divide it.
constexpr int64_t kWeightPanel = 16;
// Elements of W[in, out] packed: ceil(out / 16) panels of in x 16, the columns past `out` zero.
inline int64_t packed_weight_elements(int64_t in, int64_t out) {
  return (out + kWeightPanel - 1) / kWeightPanel * kWeightPanel * in;
}
// Packs W[in, out] (row-major, the transposed torch weight) into dst, packed_weight_elements(in, out) long.
void pack_weight_panels(const float* w, int64_t in, int64_t out, float* dst);
void pack_weight_panels(const uint16_t* w, int64_t in, int64_t out, uint16_t* dst);

// The columns [first, second) of a product with `out` columns that part `part` of `parts` computes:
// contiguous whole vectors, as evenly as they divide (the earlier parts take the extra one), the last part
// also taking the columns that make no whole vector. Depends on the instruction set in use.
std::pair<int64_t, int64_t> small_linear_columns(int64_t out, int part, int parts);

}  // namespace stx::kernels
