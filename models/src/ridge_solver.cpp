#include "ridge_solver.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace stx::models {
namespace {

// The inner products the factorisation is made of: dot(x, y, n), and dot4, four at once of x against
// the rows y, y + stride, y + 2 stride, y + 3 stride (x read once for four rows).
struct DotKernels {
  double (*dot)(const double* x, const double* y, int64_t n);
  void (*dot4)(const double* x, const double* y, int64_t stride, int64_t n, double* out);
};

// Four independent sums, so that the compiler may keep them in vector registers (one running sum is one
// long dependency chain, which it may not reorder).
double dot_portable(const double* x, const double* y, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += x[k] * y[k];
    s1 += x[k + 1] * y[k + 1];
    s2 += x[k + 2] * y[k + 2];
    s3 += x[k + 3] * y[k + 3];
  }
  for (; k < n; ++k) s0 += x[k] * y[k];
  return (s0 + s2) + (s1 + s3);
}

void dot4_portable(const double* x, const double* y, int64_t stride, int64_t n, double* out) {
  for (int r = 0; r < 4; ++r) out[r] = dot_portable(x, y + r * stride, n);
}

__attribute__((target("avx2,fma"))) double horizontal_sum(__m256d v) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, v);
  return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
}

__attribute__((target("avx2,fma"))) double dot_avx2(const double* x, const double* y, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(x + k), _mm256_loadu_pd(y + k), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(x + k + 4), _mm256_loadu_pd(y + k + 4), s1);
  }
  double sum = horizontal_sum(_mm256_add_pd(s0, s1));
  for (; k < n; ++k) sum += x[k] * y[k];
  return sum;
}

__attribute__((target("avx2,fma"))) void dot4_avx2(const double* x, const double* y, int64_t stride, int64_t n,
                                                    double* out) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  const double *y0 = y, *y1 = y + stride, *y2 = y + 2 * stride, *y3 = y + 3 * stride;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const __m256d xv = _mm256_loadu_pd(x + k);
    s0 = _mm256_fmadd_pd(xv, _mm256_loadu_pd(y0 + k), s0);
    s1 = _mm256_fmadd_pd(xv, _mm256_loadu_pd(y1 + k), s1);
    s2 = _mm256_fmadd_pd(xv, _mm256_loadu_pd(y2 + k), s2);
    s3 = _mm256_fmadd_pd(xv, _mm256_loadu_pd(y3 + k), s3);
  }
  // The four sums into one vector: [s0, s1, s2, s3] from pairwise adds, no trip through memory per sum.
  const __m256d pairs01 = _mm256_hadd_pd(s0, s1), pairs23 = _mm256_hadd_pd(s2, s3);
  const __m256d sums = _mm256_add_pd(_mm256_permute2f128_pd(pairs01, pairs23, 0x20),
                                     _mm256_permute2f128_pd(pairs01, pairs23, 0x31));
  _mm256_storeu_pd(out, sums);
  for (; k < n; ++k) {
    out[0] += x[k] * y0[k];
    out[1] += x[k] * y1[k];
    out[2] += x[k] * y2[k];
    out[3] += x[k] * y3[k];
  }
}

// Chosen once per process: every fit of a run, in training and in decoding, takes the same path.
const DotKernels& kernels() {
  static const DotKernels chosen = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return DotKernels{dot_avx2, dot4_avx2};
    return DotKernels{dot_portable, dot4_portable};
  }();
  return chosen;
}

// Columns per block of the factorisation. Unblocked, each of the n^3 / 6 products streams a row of the
// whole factor (2 MB at n = 512) through the cache, and reading memory bounded it (about 9 ms a fit on a
// Zen 3); a block column of 64 rows' worth stays in L2 while the trailing rows are updated from it.
constexpr int64_t kBlock = 64;

}  // namespace

bool solve_ridge(const double* matrix, int64_t stride, const double* b, int64_t n, double lambda,
                 std::vector<double>& factor, double* a) {
  const DotKernels& k = kernels();
  // The lower triangle of A + lambda I, row-major, factored in place into L (A + lambda I = L L^T).
  factor.resize(static_cast<size_t>(n * n));
  double* f = factor.data();
  for (int64_t i = 0; i < n; ++i) {
    std::copy_n(matrix + i * stride, i + 1, f + i * n);
    f[i * n + i] += lambda;
  }
  double out[4];
  for (int64_t kb = 0; kb < n; kb += kBlock) {
    const int64_t ke = std::min(n, kb + kBlock);
    // The block column: its diagonal block and the rows below it, from the columns before it in the block
    // (the columns before kb were subtracted by the trailing updates already).
    for (int64_t i = kb; i < n; ++i) {
      const int64_t last = std::min(i, ke - 1);
      for (int64_t j = kb; j <= last; ++j) {
        const double s = f[i * n + j] - k.dot(f + i * n + kb, f + j * n + kb, j - kb);
        if (i == j) {
          if (!(s > 0.0)) return false;
          f[i * n + i] = std::sqrt(s);
        } else {
          f[i * n + j] = s / f[j * n + j];
        }
      }
    }
    // The trailing lower triangle loses the block column's products.
    const int64_t width = ke - kb;
    for (int64_t i = ke; i < n; ++i) {
      const double* row = f + i * n + kb;
      int64_t j = ke;
      for (; j + 4 <= i + 1; j += 4) {
        k.dot4(row, f + j * n + kb, n, width, out);
        for (int r = 0; r < 4; ++r) f[i * n + j + r] -= out[r];
      }
      for (; j <= i; ++j) f[i * n + j] -= k.dot(row, f + j * n + kb, width);
    }
  }
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {  // L y = b
    y[static_cast<size_t>(i)] = (b[i] - k.dot(f + i * n, y.data(), i)) / f[i * n + i];
  }
  for (int64_t i = n - 1; i >= 0; --i) {  // L^T a = y, by rows of L: a[i] is final once rows > i are done
    a[i] = y[static_cast<size_t>(i)] / f[i * n + i];
    for (int64_t r = 0; r < i; ++r) y[static_cast<size_t>(r)] -= f[i * n + r] * a[i];
  }
  return true;
}

}  // namespace stx::models
