// The CPU decode's other cache forms, against natural-order float caches:
// - half-precision caches (DecodeParams::cache_dtype = f16): the conversions round to nearest even on every
//   CPU path, and decoding from half caches gives exactly what decoding from float caches holding the same
//   rounded values gives, at every position, for each pattern, head size and cache order;
// - column-ordered caches (DecodeParams::cache_columns), with and without the window of the last L keys:
//   bit-identical results at every position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The value of half bits h, exactly, computed in double from the definition (not by the code under test).
double half_value(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

uint16_t to_half(float x) {
  uint16_t h = 0;
  convert_to_half(&x, &h, 1);
  return h;
}

float from_half(uint16_t h) {
  float x = 0;
  convert_from_half(&h, &x, 1);
  return x;
}

TEST(HalfConversion, EveryHalfConvertsExactlyAndBackOnEveryPath) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(std::string("cpu path ") + to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    std::vector<float> floats(all.size());
    convert_from_half(all.data(), floats.data(), static_cast<int64_t>(all.size()));
    std::vector<uint16_t> back(all.size());
    convert_to_half(floats.data(), back.data(), static_cast<int64_t>(all.size()));
    for (uint32_t h = 0; h < 65536; ++h) {
      const double want = half_value(static_cast<uint16_t>(h));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(floats[h])) << "half " << h;
        ASSERT_TRUE(std::isnan(from_half(back[h]))) << "NaN must stay NaN, half " << h;
        continue;
      }
      ASSERT_EQ(static_cast<double>(floats[h]), want) << "half bits " << h;
      if (std::isinf(want)) {
        // inf saturates to the largest finite half, so a cache never holds inf
        ASSERT_EQ(back[h], (h & 0x8000) ? 0xfbff : 0x7bff);
        continue;
      }
      ASSERT_EQ(back[h], h) << "round trip of half bits " << h;
    }
  }
}

TEST(HalfConversion, RoundsToNearestEvenAndSaturatesOnEveryPath) {
  // Between each pair of neighbouring finite positive halves: the midpoint goes to the even one, and a
  // float just either side of it to the nearer one. Subnormals and the largest binade included.
  std::vector<float> inputs;
  std::vector<uint16_t> want;
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const double a = half_value(h), b = half_value(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((a + b) / 2);  // 12 significant bits: exact in float
    ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
    inputs.push_back(mid);
    want.push_back((h & 1) ? static_cast<uint16_t>(h + 1) : h);
    inputs.push_back(std::nextafter(mid, 0.0f));
    want.push_back(h);
    inputs.push_back(std::nextafter(mid, 1e9f));
    want.push_back(static_cast<uint16_t>(h + 1));
  }
  // the negative side mirrors it
  const size_t positive = inputs.size();
  for (size_t i = 0; i < positive; ++i) {
    inputs.push_back(-inputs[i]);
    want.push_back(static_cast<uint16_t>(want[i] | 0x8000));
  }
  // beyond the range: saturate; tiny: zero of the same sign
  const float specials[] = {65504.0f, 65519.0f, 65520.0f, 1e6f, std::numeric_limits<float>::max(),
                            -1e6f,    1e-9f,    -1e-9f,   0.0f, -0.0f};
  const uint16_t special_bits[] = {0x7bff, 0x7bff, 0x7bff, 0x7bff, 0x7bff,
                                   0xfbff, 0x0000, 0x8000, 0x0000, 0x8000};
  for (size_t i = 0; i < std::size(specials); ++i) {
    inputs.push_back(specials[i]);
    want.push_back(special_bits[i]);
  }
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(std::string("cpu path ") + to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    std::vector<uint16_t> got(inputs.size());
    convert_to_half(inputs.data(), got.data(), static_cast<int64_t>(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "input " << inputs[i] << " (index " << i << ")";
    // one value at a time takes the scalar tail of each path: the same bits
    for (size_t i = 0; i < inputs.size(); i += 97) ASSERT_EQ(to_half(inputs[i]), want[i]) << inputs[i];
  }
}

TEST(HalfConversion, BadArgumentsAreRefused) {
  float x = 1.0f;
  uint16_t h = 0;
  EXPECT_THROW(convert_to_half(&x, &h, -1), Error);
  EXPECT_THROW(convert_to_half(nullptr, &h, 1), Error);
  EXPECT_THROW(convert_from_half(&h, nullptr, 1), Error);
  EXPECT_NO_THROW(convert_to_half(nullptr, nullptr, 0));
}

struct HalfCase {
  Pattern pattern;
  int64_t head_dim;
  int64_t columns;  // cache_columns; with a window when > 0
};

std::string name(const HalfCase& c) {
  return std::string(to_string(c.pattern)) + " D=" + std::to_string(c.head_dim) +
         " columns=" + std::to_string(c.columns);
}

// Decodes every position of a 2 x 3-head sequence twice, from float caches and from half caches holding the
// same (rounded) values, and requires the same bits; the float result is also checked against the
// unrounded values within half precision's error.
void expect_half_equals_float_on_rounded_values(const HalfCase& c) {
  SCOPED_TRACE(name(c));
  const int64_t B = 2, H = 3, D = c.head_dim, T = 150, capacity = 163, L = c.columns;
  const int64_t rows = cache_rows(capacity, L);
  std::mt19937 rng(static_cast<uint32_t>(D * 31 + L));
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> q(static_cast<size_t>(T * B * H * D)), k(static_cast<size_t>(B * H * capacity * D)),
      v(k.size());
  for (float& x : q) x = normal(rng);
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  // the caches in the kernel's row order, float (rounded through half) and half
  std::vector<float> kf(static_cast<size_t>(B * H * rows * D), std::nanf("")), vf(kf.size(), std::nanf(""));
  std::vector<uint16_t> kh(kf.size(), 0x7e00), vh(kf.size(), 0x7e00);
  std::vector<float> kwf, vwf;
  std::vector<uint16_t> kwh, vwh;
  if (L > 0) {
    kwf.assign(static_cast<size_t>(B * H * L * D), std::nanf(""));
    vwf = kwf;
    kwh.assign(kwf.size(), 0x7e00);
    vwh = kwh;
  }
  const std::vector<HeadPattern> patterns =
      layer_patterns(c.pattern, 37, 5, static_cast<int>(H), Combination::merged);
  DecodeParams p = stx::test::contiguous_decode(B, H, D, capacity, rows, patterns);
  p.k_window_stride = p.v_window_stride = Strides::contiguous(H, std::max<int64_t>(L, 1), D);
  p.cache_columns = L;
  std::vector<float> out_f(static_cast<size_t>(B * H * D)), out_h(out_f.size()), lse_f(B * H), lse_h(B * H);
  std::vector<float> out_exact(out_f.size());
  double worst = 0;
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t bh = 0; bh < B * H; ++bh) {  // append position i
      const float* kr = k.data() + (bh * capacity + i) * D;
      const float* vr = v.data() + (bh * capacity + i) * D;
      const int64_t at = (bh * rows + cache_row(i, L, capacity)) * D;
      convert_to_half(kr, kh.data() + at, D);
      convert_to_half(vr, vh.data() + at, D);
      convert_from_half(kh.data() + at, kf.data() + at, D);
      convert_from_half(vh.data() + at, vf.data() + at, D);
      if (L > 0) {
        const int64_t slot = (bh * L + i % L) * D;
        std::copy_n(kh.data() + at, D, kwh.data() + slot);
        std::copy_n(vh.data() + at, D, vwh.data() + slot);
        std::copy_n(kf.data() + at, D, kwf.data() + slot);
        std::copy_n(vf.data() + at, D, vwf.data() + slot);
      }
    }
    p.q = q.data() + i * B * H * D;
    p.position = i;
    auto decode_from = [&](DType type, const void* k_cache, const void* v_cache, const void* k_window,
                           const void* v_window, std::vector<float>& out, std::vector<float>& lse) {
      p.cache_dtype = type;
      p.k_cache = k_cache;
      p.v_cache = v_cache;
      p.k_window = L > 0 ? k_window : nullptr;
      p.v_window = L > 0 ? v_window : nullptr;
      p.out = out.data();
      p.lse = lse.data();
      attention_decode(p);
    };
    decode_from(DType::f32, kf.data(), vf.data(), kwf.data(), vwf.data(), out_f, lse_f);
    decode_from(DType::f16, kh.data(), vh.data(), kwh.data(), vwh.data(), out_h, lse_h);
    ASSERT_EQ(out_f, out_h) << "position " << i;
    ASSERT_EQ(lse_f, lse_h) << "position " << i;
    // against the unrounded keys and values (natural order, float): within half precision
    DecodeParams exact = p;
    exact.cache_dtype = DType::f32;
    exact.cache_columns = 0;
    exact.k_window = exact.v_window = nullptr;
    exact.k_cache = k.data();
    exact.v_cache = v.data();
    exact.k_stride = exact.v_stride = Strides::contiguous(H, capacity, D);
    exact.out = out_exact.data();
    exact.lse = nullptr;
    attention_decode(exact);
    for (size_t e = 0; e < out_exact.size(); ++e)
      worst = std::max(worst, double(std::fabs(out_exact[e] - out_h[e])));
  }
  EXPECT_LT(worst, 2e-2) << "half caches drifted from the float values";  // |v| ~ 1.5, scores ~ sqrt(D)
  EXPECT_GT(worst, 0.0) << "the half path read float values: rounding left no trace";
}

TEST(DecodeHalfCache, EqualsFloatCacheOfTheRoundedValuesOnEveryPath) {
  const HalfCase cases[] = {
      {Pattern::strided, 64, 0},  {Pattern::fixed, 64, 0}, {Pattern::dense, 32, 0},
      {Pattern::strided, 20, 0},   // head size not a multiple of any vector width: the scalar tails
      {Pattern::strided, 48, 37},  // column order and window, as the decoder keeps strided layers
      {Pattern::fixed, 24, 16},
  };
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(std::string("cpu path ") + to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    for (const HalfCase& c : cases) expect_half_equals_float_on_rounded_values(c);
  }
}

TEST(DecodeHalfCache, CacheTypesTheKernelCannotReadAreRefused) {
  std::vector<float> q(32, 0.5f), out(32);
  std::vector<uint16_t> cache(10 * 32, 0x3c00);  // 1.0
  const std::vector<HeadPattern> patterns = {HeadPattern::dense_causal()};
  DecodeParams p = stx::test::contiguous_decode(1, 1, 32, 10, 10, patterns);
  p.q = q.data();
  p.k_cache = p.v_cache = cache.data();
  p.out = out.data();
  p.position = 9;
  p.cache_dtype = DType::f16;
  ASSERT_NO_THROW(attention_decode(p));
  EXPECT_EQ(out[0], 1.0f);  // every value is 1
  p.cache_dtype = DType::bf16;
  const std::string message = stx::test::error_message([&] { attention_decode(p); });
  EXPECT_TRUE(stx::test::mentions(message, {"bfloat16", "caches"})) << message;
}

// The column-ordered cache (DecodeParams::cache_columns) holds the same keys in another row order: decoding
// must give bit-identical results at every position, whatever the pattern, with a capacity that is not a
// multiple of the column count; and with the window of the last L keys, which must then be read from it.
TEST(DecodeColumnOrder, EqualsNaturalOrderAtEveryPosition) {
  const int64_t B = 2, H = 3, D = 32, T = 120, capacity = 131;
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int64_t columns : {int64_t{7}, int64_t{16}}) {
    const int64_t rows = cache_rows(capacity, columns);
    ASSERT_GE(rows, capacity);
    std::vector<float> k(static_cast<size_t>(B * H * capacity * D)), v(k.size()),
        q(static_cast<size_t>(B * H * D));
    std::vector<float> k_columns(static_cast<size_t>(B * H * rows * D), kNaN),
        v_columns(k_columns.size(), kNaN);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    for (float& x : q) x = normal(rng);
    for (int64_t bh = 0; bh < B * H; ++bh) {
      for (int64_t j = 0; j < capacity; ++j) {
        const int64_t row = cache_row(j, columns, capacity);
        ASSERT_LT(row, rows);
        for (int64_t d = 0; d < D; ++d) {
          k_columns[(bh * rows + row) * D + d] = k[(bh * capacity + j) * D + d];
          v_columns[(bh * rows + row) * D + d] = v[(bh * capacity + j) * D + d];
        }
      }
    }
    for (const Pattern pattern : {Pattern::strided, Pattern::fixed, Pattern::dense}) {
      const auto patterns = layer_patterns(pattern, columns, 2, static_cast<int>(H), Combination::merged);
      for (int64_t i = 0; i < T; ++i) {
        std::vector<float> natural(q.size()), ordered(q.size()), lse_natural(B * H), lse_ordered(B * H);
        DecodeParams p = stx::test::contiguous_decode(B, H, D, capacity, capacity, patterns);
        p.q = q.data();
        p.position = i;
        p.k_cache = k.data();
        p.v_cache = v.data();
        p.out = natural.data();
        p.lse = lse_natural.data();
        attention_decode(p);
        p.k_cache = k_columns.data();
        p.v_cache = v_columns.data();
        p.k_stride = p.v_stride = Strides::contiguous(H, rows, D);
        p.cache_columns = columns;
        p.out = ordered.data();
        p.lse = lse_ordered.data();
        attention_decode(p);
        ASSERT_EQ(natural, ordered) << to_string(pattern) << " columns " << columns << " position " << i;
        ASSERT_EQ(lse_natural, lse_ordered);
        // With the window of the last `columns` positions (row j mod columns), NaN everywhere else.
        std::vector<float> k_window(static_cast<size_t>(B * H * columns * D), kNaN),
            v_window(k_window.size(), kNaN);
        for (int64_t bh = 0; bh < B * H; ++bh) {
          for (int64_t j = std::max<int64_t>(0, i - columns + 1); j <= i; ++j) {
            for (int64_t d = 0; d < D; ++d) {
              k_window[(bh * columns + j % columns) * D + d] = k[(bh * capacity + j) * D + d];
              v_window[(bh * columns + j % columns) * D + d] = v[(bh * capacity + j) * D + d];
            }
          }
          // Blank the band in the column cache: it must be read from the window.
          for (int64_t j = std::max<int64_t>(0, i - columns + 1); j <= i; ++j) {
            const int64_t row = cache_row(j, columns, capacity);
            for (int64_t d = 0; d < D; ++d) k_columns[(bh * rows + row) * D + d] = kNaN;
          }
        }
        p.k_window = k_window.data();
        p.v_window = v_window.data();
        p.k_window_stride = p.v_window_stride = Strides::contiguous(H, columns, D);
        attention_decode(p);
        ASSERT_EQ(natural, ordered) << "with a window: " << to_string(pattern) << " position " << i;
        ASSERT_EQ(lse_natural, lse_ordered);
        for (int64_t bh = 0; bh < B * H; ++bh) {  // restore the band for the next position
          for (int64_t j = std::max<int64_t>(0, i - columns + 1); j <= i; ++j) {
            const int64_t row = cache_row(j, columns, capacity);
            for (int64_t d = 0; d < D; ++d)
              k_columns[(bh * rows + row) * D + d] = k[(bh * capacity + j) * D + d];
          }
        }
      }
    }
  }
}

}  // namespace
