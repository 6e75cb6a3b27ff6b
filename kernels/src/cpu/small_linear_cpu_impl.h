// small_linear (see stx/kernels/small_linear.h), compiled per instruction set next to the attention
// kernels: include after cpu/attention_cpu_impl.h, which brings simd.h into the namespace.
//
// Register tile: R rows x CV vectors of outputs, accumulated over the whole depth, so each weight vector
// loaded feeds R FMAs and each x element is one broadcast. Columns past the last whole tile go scalar.

namespace stx::kernels::detail::STX_CPU_NAMESPACE {
namespace {

constexpr int kLinearCV = 4;                                     // vectors per tile row
constexpr int kLinearRows = kAccRegs / kLinearCV;                // 4 with AVX-512, 3 otherwise
constexpr int64_t kLinearTile = static_cast<int64_t>(kLinearCV) * W;  // columns per tile

template <int R>
void linear_tile(const SmallLinearParams& p, int64_t row0, int64_t col0) {
  vfloat acc[R][kLinearCV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kLinearCV; ++v) acc[r][v] = p.bias ? load(p.bias + col0 + v * W) : vfloat{};
  const float* x = p.x + row0 * p.x_stride;
  for (int64_t i = 0; i < p.in; ++i) {
    const float* w = p.weight_t + i * p.out + col0;
    vfloat wv[kLinearCV];
#pragma GCC unroll 4
    for (int v = 0; v < kLinearCV; ++v) wv[v] = load(w + v * W);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const vfloat xv = splat(x[r * p.x_stride + i]);
#pragma GCC unroll 4
      for (int v = 0; v < kLinearCV; ++v) acc[r][v] += xv * wv[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kLinearCV; ++v) store(p.y + (row0 + r) * p.y_stride + col0 + v * W, acc[r][v]);
}

void linear_rows(const SmallLinearParams& p, int64_t row0, int64_t rows, int64_t col0) {
  switch (rows) {
    case 1: return linear_tile<1>(p, row0, col0);
    case 2: return linear_tile<2>(p, row0, col0);
    case 3: return linear_tile<3>(p, row0, col0);
    default:
      if constexpr (kLinearRows >= 4) return linear_tile<4>(p, row0, col0);
  }
}

// Columns [col0, out) that make no whole tile, for every row.
void linear_tail(const SmallLinearParams& p, int64_t col0) {
  for (int64_t r = 0; r < p.rows; ++r) {
    float* y = p.y + r * p.y_stride;
    for (int64_t c = col0; c < p.out; ++c) y[c] = p.bias ? p.bias[c] : 0.0f;
    for (int64_t i = 0; i < p.in; ++i) {
      const float xv = p.x[r * p.x_stride + i];
      const float* w = p.weight_t + i * p.out;
      for (int64_t c = col0; c < p.out; ++c) y[c] += xv * w[c];
    }
  }
}

}  // namespace

void small_linear(const SmallLinearParams& p) {
  const int64_t tiles = p.out / kLinearTile;
  const bool threaded = tiles > 1 && p.rows * p.in * p.out >= (int64_t{1} << 15);
#pragma omp parallel for schedule(static) if (threaded)
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t row0 = 0; row0 < p.rows; row0 += kLinearRows) {
      linear_rows(p, row0, std::min<int64_t>(kLinearRows, p.rows - row0), t * kLinearTile);
    }
  }
  if (tiles * kLinearTile < p.out) linear_tail(p, tiles * kLinearTile);
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
