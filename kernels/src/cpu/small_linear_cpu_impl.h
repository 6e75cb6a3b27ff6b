// small_linear (see stx/kernels/small_linear.h), compiled per instruction set next to the attention
// kernels: include after cpu/cpu_kernels_impl.h, which brings simd.h into the namespace.
//
// Register tile: R rows x CV vectors of outputs, accumulated over the whole depth, so each weight vector
// loaded feeds R FMAs and each x element is one broadcast. The tile is 4 rows tall on every instruction
// set, so a batch of 8 or 16 samples takes whole passes: with AVX2's 12 accumulators a 3-row tile left
// a 1-row pass at 16 rows that cost nearly a full one. Columns past the last whole tile take one-vector
// tiles, and the last partial vector goes scalar.

namespace stx::kernels::detail::STX_CPU_NAMESPACE {
namespace {

constexpr int kLinearRows = 4;
constexpr int kLinearCV = kAccRegs / kLinearRows;                // 4 with AVX-512, 3 otherwise
constexpr int64_t kLinearTile = static_cast<int64_t>(kLinearCV) * W;  // columns per tile

inline float widen_scalar(float w) { return w; }
inline float widen_scalar(uint16_t w) { return half_to_float(w); }

static_assert(kWeightPanel % W == 0, "a vector must not straddle two weight panels");

// Weight (i, column) of the panels: column's panel, then row i of it, then the column within it.
template <class C>
const C* weight_at(const SmallLinearParams& p, int64_t i, int64_t column) {
  return static_cast<const C*>(p.weights) + (column / kWeightPanel) * kWeightPanel * p.in + i * kWeightPanel +
         column % kWeightPanel;
}

// C: the weights' element type, float or uint16_t (IEEE half bits), widened as they are loaded. The
// arithmetic is the same for both, so half weights give the bits their widened floats give.
template <class C, int R, int CV>
void linear_tile(const SmallLinearParams& p, int64_t row0, int64_t col0) {
  vfloat acc[R][CV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) acc[r][v] = p.bias ? load(p.bias + col0 + v * W) : vfloat{};
  const float* x = p.x + row0 * p.x_stride;
  // Each vector of the tile walks its own panel, kWeightPanel elements a row.
  const C* panel[CV];
#pragma GCC unroll 4
  for (int v = 0; v < CV; ++v) panel[v] = weight_at<C>(p, 0, col0 + v * W);
  for (int64_t i = 0; i < p.in; ++i) {
    vfloat wv[CV];
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) wv[v] = load_row(panel[v] + i * kWeightPanel);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const vfloat xv = splat(x[r * p.x_stride + i]);
#pragma GCC unroll 4
      for (int v = 0; v < CV; ++v) acc[r][v] += xv * wv[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) store(p.y + (row0 + r) * p.y_stride + col0 + v * W, acc[r][v]);
}

// Every row of the CV-vector column strip at col0, kLinearRows rows at a time.
template <class C, int CV>
void linear_strip(const SmallLinearParams& p, int64_t col0) {
  for (int64_t row0 = 0; row0 < p.rows; row0 += kLinearRows) {
    switch (std::min<int64_t>(kLinearRows, p.rows - row0)) {
      case 1: linear_tile<C, 1, CV>(p, row0, col0); break;
      case 2: linear_tile<C, 2, CV>(p, row0, col0); break;
      case 3: linear_tile<C, 3, CV>(p, row0, col0); break;
      default: linear_tile<C, 4, CV>(p, row0, col0); break;
    }
  }
}

// Columns [col0, out) that make no whole vector, for every row.
template <class C>
void linear_tail(const SmallLinearParams& p, int64_t col0) {
  for (int64_t r = 0; r < p.rows; ++r) {
    float* y = p.y + r * p.y_stride;
    for (int64_t c = col0; c < p.out; ++c) y[c] = p.bias ? p.bias[c] : 0.0f;
    for (int64_t i = 0; i < p.in; ++i) {
      const float xv = p.x[r * p.x_stride + i];
      for (int64_t c = col0; c < p.out; ++c) y[c] += xv * widen_scalar(*weight_at<C>(p, i, c));
    }
  }
}

// A part's share, for threads sharing one product: whole vectors, as even as they divide (the earlier parts
// one more), so that two threads split the 192 columns of the audio models 96 / 96 rather than one tile
// against two. The last part also takes the columns that make no whole vector.
std::pair<int64_t, int64_t> vector_range(int64_t out, int part, int parts) {
  const int64_t vectors = out / W, base = vectors / parts, extra = vectors % parts;
  const int64_t first = part * base + std::min<int64_t>(part, extra);
  const int64_t last = first + base + (part < extra ? 1 : 0);
  return {first * W, part == parts - 1 ? out : last * W};
}

// Columns [first, last) of whole vectors: tiles of kLinearCV vectors, then one narrower tile for the rest.
// Every width sums each column the same way, so the bits do not depend on where a part starts.
template <class C>
void run_vectors(const SmallLinearParams& p, int64_t first, int64_t last) {
  int64_t col = first;
  for (; col + kLinearTile <= last; col += kLinearTile) linear_strip<C, kLinearCV>(p, col);
  switch ((last - col) / W) {
    case 0: break;
    case 1: linear_strip<C, 1>(p, col); break;
    case 2: if constexpr (kLinearCV > 2) linear_strip<C, 2>(p, col); break;
    default: if constexpr (kLinearCV > 3) linear_strip<C, 3>(p, col); break;
  }
}

template <class C>
void small_linear_of(const SmallLinearParams& p) {
  if (p.parts > 1) {
    const auto [first, last] = vector_range(p.out, p.part, p.parts);
    const int64_t whole = std::min(last, p.out / W * W);
    if (first < whole) run_vectors<C>(p, first, whole);
    if (whole < last) linear_tail<C>(p, whole);
    return;
  }
  const int64_t tiles = p.out / kLinearTile;
  const int64_t vectors_left = (p.out - tiles * kLinearTile) / W;  // fewer than kLinearCV
  const int64_t strips = tiles + vectors_left;
  const bool threaded = strips > 1 && p.rows * p.in * p.out >= (int64_t{1} << 15) && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (threaded)
  for (int64_t s = 0; s < strips; ++s) {
    if (s < tiles) {
      linear_strip<C, kLinearCV>(p, s * kLinearTile);
    } else {
      linear_strip<C, 1>(p, tiles * kLinearTile + (s - tiles) * W);
    }
  }
  const int64_t done = tiles * kLinearTile + vectors_left * W;
  if (done < p.out) linear_tail<C>(p, done);
}

}  // namespace

void small_linear(const SmallLinearParams& p) {
  if (p.weight_dtype == DType::f16) return small_linear_of<uint16_t>(p);
  small_linear_of<float>(p);
}

std::pair<int64_t, int64_t> small_linear_columns(int64_t out, int part, int parts) {
  return vector_range(out, part, parts);
}

}  // namespace stx::kernels::detail::STX_CPU_NAMESPACE
