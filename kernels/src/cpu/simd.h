// SIMD building blocks for the CPU kernels, written with GCC vector extensions so that one source
// compiles to AVX-512, AVX2+FMA or baseline SSE2 depending on the translation unit's flags.
// Include only after defining STX_VEC_BYTES (64, 32 or 16) and inside the backend's namespace.
#pragma once

// <cstdint>, <cstring> and <immintrin.h> must be included by the includer, outside any namespace.

#ifndef STX_VEC_BYTES
#error "define STX_VEC_BYTES before including simd.h"
#endif

// W floats per vector.
constexpr int W = STX_VEC_BYTES / 4;
typedef float vfloat __attribute__((vector_size(STX_VEC_BYTES)));
typedef int32_t vint __attribute__((vector_size(STX_VEC_BYTES)));
// The same vector with 4-byte alignment: every load and store below may be unaligned.
typedef float vfloat_u __attribute__((vector_size(STX_VEC_BYTES), aligned(4)));

inline vfloat load(const float* p) { return *reinterpret_cast<const vfloat_u*>(p); }
inline void store(float* p, vfloat v) { *reinterpret_cast<vfloat_u*>(p) = v; }
// Written lane by lane, not as vfloat{} + x: 0 + x is not x for x = -0, so GCC must keep that add
// (and broadcast from a register); this form becomes a plain broadcast that folds into an FMA's memory
// operand ({1to16}), which in the gemm tiles halves the uops competing with the FMAs.
// (A lane loop does not do it either: inside the gemm tiles GCC inserts the lanes one by one.)
inline vfloat splat(float x) {
#if STX_VEC_BYTES == 64
  return vfloat{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#elif STX_VEC_BYTES == 32
  return vfloat{x, x, x, x, x, x, x, x};
#else
  return vfloat{x, x, x, x};
#endif
}

// IEEE half bits <-> float, one value, for the paths without F16C and for ragged ends. Rounds to nearest
// even; the caller saturates first (see convert_to_half), so no finite input overflows here.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal, mantissa * 2^-24: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x38800000u) {  // normal in half (>= 2^-14): round the low 13 bits, rebias 127 -> 15
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude < 0x33000000u) return sign;  // below 2^-25: rounds to zero
  // Subnormal in half: (1.m * 2^(e-127)) / 2^-24, rounded to nearest even.
  const uint32_t e = magnitude >> 23, m = (magnitude & 0x7fffffu) | 0x800000u, shift = 126 - e;
  uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1), half_way = 1u << (shift - 1);
  if (rest > half_way || (rest == half_way && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

// W halves to W floats, and back (nearest even). F16C where the build has it.
inline vfloat load_half(const uint16_t* p) {
#if STX_VEC_BYTES == 64
  // The maskz forms with every lane set: the plain ones start from an "undefined" vector that GCC 12
  // reports as maybe uninitialised.
  return reinterpret_cast<vfloat>(
      _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif STX_VEC_BYTES == 32
  return reinterpret_cast<vfloat>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  return vfloat{half_to_float(p[0]), half_to_float(p[1]), half_to_float(p[2]), half_to_float(p[3])};
#endif
}
inline void store_half(uint16_t* p, vfloat v) {
#if STX_VEC_BYTES == 64
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_maskz_cvtps_ph(0xffff, reinterpret_cast<__m512>(v),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif STX_VEC_BYTES == 32
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph(reinterpret_cast<__m256>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  for (int i = 0; i < W; ++i) p[i] = float_to_half(v[i]);
#endif
}
// W bfloat16 values to W floats (exact: a bfloat16 is the high half of a float), and back, rounding to
// nearest even as c10::BFloat16 does, so a row rounded here has the bits LibTorch's cast would give it.
// NaN stays NaN (0x7fc0). Plain vector code: every instruction set has the shifts and adds.
typedef uint16_t vbf16 __attribute__((vector_size(STX_VEC_BYTES / 2)));
typedef uint16_t vbf16_u __attribute__((vector_size(STX_VEC_BYTES / 2), aligned(2)));
typedef uint32_t vuint __attribute__((vector_size(STX_VEC_BYTES)));
inline vfloat load_bf16(const uint16_t* p) {
  const vuint wide = __builtin_convertvector(static_cast<vbf16>(*reinterpret_cast<const vbf16_u*>(p)), vuint);
  return reinterpret_cast<vfloat>(wide << 16);
}
inline void store_bf16(uint16_t* p, vfloat v) {
  const vuint bits = reinterpret_cast<vuint>(v);
  const vuint rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const vuint nan = reinterpret_cast<vuint>((bits & 0x7fffffffu) > 0x7f800000u);
  const vuint out = (rounded & ~nan) | (nan & 0x7fc0u);
  *reinterpret_cast<vbf16_u*>(p) = __builtin_convertvector(out, vbf16);
}
inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// A cache row's W elements as floats, whichever of the two types the cache holds.
inline vfloat load_row(const float* p) { return load(p); }
inline vfloat load_row(const uint16_t* p) { return load_half(p); }

inline float reduce_sum(vfloat v) {
  float s = 0.0f;
  for (int i = 0; i < W; ++i) s += v[i];
  return s;
}

// In-place transpose of a W x W tile held as W row vectors: log2(W) rounds of two-source shuffles;
// the round of distance s swaps the off-diagonal s x s sub-blocks of every 2s x 2s block.
template <int S>
inline vint shuffle_mask(bool high) {
  vint m;
  for (int k = 0; k < W; ++k) m[k] = (k & S) == 0 ? k + (high ? S : 0) : W + k - (high ? 0 : S);
  return m;
}
// Lane k of the result is lane m[k] of the pair (a, b) taken as one 2W-lane vector. GCC has a two-source
// shuffle with a mask vector; clang (the fuzzing build) only one with constant indices, so it gets lanes.
inline vfloat shuffle_pair(vfloat a, vfloat b, vint m) {
#if defined(__clang__)
  vfloat r;
  for (int k = 0; k < W; ++k) r[k] = m[k] < W ? a[m[k]] : b[m[k] - W];
  return r;
#else
  return __builtin_shuffle(a, b, m);
#endif
}
template <int S>
inline void transpose_round(vfloat* x) {
  const vint lo = shuffle_mask<S>(false), hi = shuffle_mask<S>(true);
#pragma GCC unroll 16
  for (int i = 0; i < W; ++i)
    if ((i & S) == 0) {
      const vfloat a = x[i], b = x[i + S];
      x[i] = shuffle_pair(a, b, lo);
      x[i + S] = shuffle_pair(a, b, hi);
    }
}
inline void transpose_tile(vfloat* x) {
  transpose_round<1>(x);
  transpose_round<2>(x);
  if constexpr (W > 4) transpose_round<4>(x);
  if constexpr (W > 8) transpose_round<8>(x);
}

// 2^t for t <= ~0 (scores minus their running maximum); 0 below 2^-126, so -inf maps to exactly 0.
// t = n + f with n = round(t), |f| <= 1/2; 2^f by its degree-6 Taylor polynomial (relative error
// about 1.2e-7, under fp32 rounding), 2^n by adding n to the exponent bits.
inline vfloat exp2v(vfloat t) {
  const vfloat tc = t < -126.0f ? splat(-126.0f) : t;
  const vfloat r = (tc + 12582912.0f) - 12582912.0f;  // round to nearest: 1.5 * 2^23
  const vfloat f = tc - r;
  vfloat p = splat(1.540353e-4f);
  p = p * f + 1.333355e-3f;
  p = p * f + 9.618129e-3f;
  p = p * f + 5.550411e-2f;
  p = p * f + 2.402265e-1f;
  p = p * f + 6.931472e-1f;
  p = p * f + 1.0f;
  const vint n = __builtin_convertvector(r, vint);
  const vfloat y = reinterpret_cast<vfloat>(reinterpret_cast<vint>(p) + (n << 23));
  return t < -126.0f ? vfloat{} : y;
}

// --- a small register-tiled GEMM for attention tiles --------------------------------------------------
// c[i][0:N] (+)= sum_k a[i*ai + k*ak] * b[k*ldb + 0:N],  i < M, N a multiple of W.
// With ai = lda, ak = 1 this is A @ B; with ai = 1, ak = lda it is A^T @ B, so no tile is transposed.
// Register tile: R rows x CV vectors of accumulators; each k step loads CV vectors of b and
// broadcasts R scalars of a.

#if STX_VEC_BYTES == 64
constexpr int kAccRegs = 16;  // of 32 zmm registers: R x CV = 4 x 4 or 8 x 2 tiles divide blocks of 32 exactly
#else
constexpr int kAccRegs = 12;  // of 16 ymm / xmm registers
#endif

template <int R, int CV, bool Accumulate>
inline void gemm_tile(const float* __restrict a, int64_t ai, int64_t ak, const float* __restrict b, int64_t ldb,
                      float* __restrict c, int64_t ldc, int64_t depth) {
  vfloat acc[R][CV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) acc[r][v] = Accumulate ? load(c + r * ldc + v * W) : vfloat{};
  for (int64_t k = 0; k < depth; ++k) {
    vfloat bk[CV];
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) bk[v] = load(b + k * ldb + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const vfloat x = splat(a[r * ai + k * ak]);
#pragma GCC unroll 4
      for (int v = 0; v < CV; ++v) acc[r][v] += x * bk[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) store(c + r * ldc + v * W, acc[r][v]);
}

// gemm_tile with a run-time height rows <= Rmax, dispatched to the template of that height.
template <int Rmax, int CV, bool Accumulate>
inline void gemm_tail(int64_t rows, const float* a, int64_t ai, int64_t ak, const float* b, int64_t ldb, float* c,
                      int64_t ldc, int64_t depth) {
  if constexpr (Rmax >= 1) {
    if (rows == Rmax) return gemm_tile<Rmax, CV, Accumulate>(a, ai, ak, b, ldb, c, ldc, depth);
    gemm_tail<Rmax - 1, CV, Accumulate>(rows, a, ai, ak, b, ldb, c, ldc, depth);
  }
}

template <int CV, bool Accumulate>
inline void gemm_rows(int64_t m, const float* a, int64_t ai, int64_t ak, const float* b, int64_t ldb, float* c,
                      int64_t ldc, int64_t depth) {
  constexpr int R = kAccRegs / CV;
  int64_t i = 0;
  for (; i + R <= m; i += R) gemm_tile<R, CV, Accumulate>(a + i * ai, ai, ak, b, ldb, c + i * ldc, ldc, depth);
  // The remaining m - i < R rows as one tile of exactly that height: one row at a time would run a
  // quarter of a 32-row block at a twelfth of the register tile's throughput.
  if (i < m) gemm_tail<R - 1, CV, Accumulate>(m - i, a + i * ai, ai, ak, b, ldb, c + i * ldc, ldc, depth);
}

template <bool Accumulate>
inline void gemm(int64_t m, int64_t n, int64_t depth, const float* a, int64_t ai, int64_t ak, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 4 * W <= n; j += 4 * W) gemm_rows<4, Accumulate>(m, a, ai, ak, b + j, ldb, c + j, ldc, depth);
  for (; j + 2 * W <= n; j += 2 * W) gemm_rows<2, Accumulate>(m, a, ai, ak, b + j, ldb, c + j, ldc, depth);
  for (; j < n; j += W) gemm_rows<1, Accumulate>(m, a, ai, ak, b + j, ldb, c + j, ldc, depth);
}
