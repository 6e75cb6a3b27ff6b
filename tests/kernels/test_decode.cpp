// Incremental decoding: attention_decode at every position of a sequence, with a KV cache larger than the
// sequence and filled one position at a time, equals the matching row of the full forward (out and lse).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;
using stx::test::error_message;
using stx::test::KernelCase;
using stx::test::make_case;
using stx::test::mentions;
using stx::test::Storage;
using stx::test::Tensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f;
constexpr int64_t kSpareCapacity = 29;  // cache slots past the sequence end

std::vector<KernelCase> decode_cases() {
  const Combination merged = Combination::merged, inter = Combination::interleaved,
                    multi = Combination::multihead;
  return {
      make_case(150, 64, 2, 3, Pattern::dense, 0, 0, merged, 0, 16),
      make_case(150, 64, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(150, 64, 2, 3, Pattern::strided, 37, 0, inter, 0, 16),
      make_case(150, 64, 2, 3, Pattern::strided, 37, 0, inter, 1, 16),
      make_case(150, 32, 2, 4, Pattern::strided, 37, 0, multi, 0, 16),
      make_case(150, 64, 2, 3, Pattern::fixed, 37, 5, merged, 0, 16),
      make_case(150, 64, 2, 3, Pattern::fixed, 37, 5, inter, 0, 16),
      make_case(150, 64, 2, 3, Pattern::fixed, 37, 5, inter, 1, 16),
      make_case(150, 32, 2, 4, Pattern::fixed, 37, 5, multi, 0, 16),
      // the audio models' head size: 6 vectors kept in registers with AVX2, 3 with AVX-512, 12 (the general
      // path) with the portable build; and 5 vectors with AVX2, not whole vectors with AVX-512
      make_case(150, 48, 2, 3, Pattern::strided, 37, 0, merged, 0, 16),
      make_case(150, 40, 2, 3, Pattern::fixed, 37, 5, merged, 0, 16),
      // the cache stored [B, capacity, H, D + 8], read through strides
      make_case(300, 128, 1, 2, Pattern::fixed, 100, 12, merged, 0, 32, Storage::seq_major),
      make_case(300, 32, 2, 2, Pattern::strided, 17, 0, multi, 0, 64, Storage::seq_major),
      make_case(5, 128, 1, 2, Pattern::fixed, 6, 2, inter, 1, 16),
  };
}

class Decode : public ::testing::TestWithParam<KernelCase> {};

TEST_P(Decode, EveryPositionEqualsTheFullForwardRow) {
  // given random q, k, v of the whole sequence and the reference forward
  const KernelCase& kc = GetParam();
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim, capacity = T + kSpareCapacity;
  const std::vector<HeadPattern> patterns = kc.patterns();
  const auto layout = cached_layout(T, kc.block, patterns);
  std::mt19937 rng = stx::test::case_rng(kc, 3);
  Tensor q(B, H, T, D, kc.storage, kNaN), k(B, H, T, D, kc.storage, kNaN), v(B, H, T, D, kc.storage, kNaN);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  std::vector<double> ref_out, ref_lse;
  stx::test::reference_forward(patterns, {B, H, T, D, kc.scale}, q.to_double(), k.to_double(), v.to_double(),
                               ref_out, ref_lse);

  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(std::string("cpu path ") + to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    // and the kernel's full forward on this path
    Tensor full_out(B, H, T, D, Storage::contiguous, kNaN);
    std::vector<float> full_lse(static_cast<size_t>(B * H * T), kNaN);
    ForwardParams fp;
    fp.q = q.data();
    fp.k = k.data();
    fp.v = v.data();
    fp.out = full_out.data();
    fp.lse = full_lse.data();
    fp.q_stride = q.strides();
    fp.k_stride = k.strides();
    fp.v_stride = v.strides();
    fp.out_stride = full_out.strides();
    fp.batch = B;
    fp.heads = H;
    fp.seq_len = T;
    fp.head_dim = D;
    fp.scale = kc.scale;
    fp.layout = layout.get();
    ASSERT_NO_THROW(attention_forward(fp));

    // when decoding position after position; cache slots not yet written hold NaN, so reading past the
    // query's position (or past the sequence end) would poison the result
    Tensor k_cache(B, H, capacity, D, kc.storage, kNaN), v_cache(B, H, capacity, D, kc.storage, kNaN);
    k_cache.fill(kNaN);
    v_cache.fill(kNaN);
    // out is [B, H, D] with 8 padding floats after each head's row; lse is [B, H]
    const int64_t row = D + stx::test::kPadding;
    std::vector<float> out(static_cast<size_t>(B * H * row), kSentinel);
    std::vector<float> lse(static_cast<size_t>(B * H));
    std::vector<double> decode_out(static_cast<size_t>(B * H * T * D)),
        decode_lse(static_cast<size_t>(B * H * T));
    DecodeParams p;
    p.k_cache = k_cache.data();
    p.v_cache = v_cache.data();
    p.out = out.data();
    p.lse = lse.data();
    p.q_stride = {q.strides().batch, q.strides().head, 0};
    p.k_stride = k_cache.strides();
    p.v_stride = v_cache.strides();
    p.out_stride = {H * row, row, 0};
    p.batch = B;
    p.heads = H;
    p.head_dim = D;
    p.capacity = capacity;
    p.scale = kc.scale;
    p.patterns = patterns.data();
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t x = 0; x < D; ++x) {
            k_cache.at(b, h, i, x) = k.at(b, h, i, x);
            v_cache.at(b, h, i, x) = v.at(b, h, i, x);
          }
      for (int64_t e = 0; e < B * H; ++e) {
        lse[e] = kNaN;
        for (int64_t x = 0; x < D; ++x) out[e * row + x] = kNaN;
      }
      p.q = q.data() + q.index(0, 0, i, 0);  // row i of every (b, h), read through q's strides
      p.position = i;
      ASSERT_NO_THROW(attention_decode(p)) << "position " << i;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t e = b * H + h;
          decode_lse[e * T + i] = lse[e];
          for (int64_t x = 0; x < D; ++x) decode_out[(e * T + i) * D + x] = out[e * row + x];
          for (int64_t x = D; x < row; ++x) ASSERT_EQ(out[e * row + x], kSentinel) << "out padding written";
        }
    }
    // then every decoded row equals the full forward's row, and the reference's
    EXPECT_TRUE(stx::test::matches_reference("decode out vs forward", decode_out, full_out.to_double(),
                                             {B, H, T, D}));
    EXPECT_TRUE(stx::test::matches_reference("decode lse vs forward", decode_lse,
                                             stx::test::to_double(full_lse), {B, H, T}));
    EXPECT_TRUE(stx::test::matches_reference("decode out vs reference", decode_out, ref_out, {B, H, T, D}));
    EXPECT_TRUE(stx::test::matches_reference("decode lse vs reference", decode_lse, ref_lse, {B, H, T}));

    // lse is optional: without it, out is the same
    p.lse = nullptr;
    ASSERT_NO_THROW(attention_decode(p));
    std::vector<double> last(static_cast<size_t>(B * H * D)), last_ref(static_cast<size_t>(B * H * D));
    for (int64_t e = 0; e < B * H; ++e)
      for (int64_t x = 0; x < D; ++x) {
        last[e * D + x] = out[e * row + x];
        last_ref[e * D + x] = decode_out[(e * T + T - 1) * D + x];
      }
    EXPECT_TRUE(stx::test::matches_reference("decode out without lse", last, last_ref, {B, H, D}));
  }
  EXPECT_EQ(active_cpu_isa(), best_cpu_isa());
}

INSTANTIATE_TEST_SUITE_P(Cases, Decode, ::testing::ValuesIn(decode_cases()), stx::test::case_name);

// ---- bad input ------------------------------------------------------------------------------------

TEST(DecodeErrors, BadInputThrowsNamingTheProblem) {
  constexpr int64_t B = 1, H = 2, D = 32, capacity = 20;
  std::vector<float> q(B * H * D, 0.5f), out(B * H * D, 0.0f), lse(B * H, 0.0f);
  std::vector<float> cache(B * H * capacity * D, 0.5f);
  const std::vector<HeadPattern> patterns = layer_patterns(Pattern::strided, 5, 0, H, Combination::multihead);
  const std::vector<HeadPattern> bad_patterns = {HeadPattern::fixed(6, 2), HeadPattern::fixed(6, 7)};
  DecodeParams valid;
  valid.q = q.data();
  valid.k_cache = valid.v_cache = cache.data();
  valid.out = out.data();
  valid.lse = lse.data();
  valid.q_stride = valid.out_stride = {H * D, D, 0};
  valid.k_stride = valid.v_stride = Strides::contiguous(H, capacity, D);
  valid.batch = B;
  valid.heads = H;
  valid.head_dim = D;
  valid.capacity = capacity;
  valid.position = capacity - 1;
  valid.patterns = patterns.data();
  ASSERT_NO_THROW(attention_decode(valid));
  EXPECT_NEAR(out[0], 0.5f, 1e-6);

  auto call = [&](const std::function<void(DecodeParams&)>& breaks) {
    DecodeParams p = valid;
    breaks(p);
    return error_message([&] { attention_decode(p); });
  };
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.position = capacity; }), {"position", "20"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.position = -1; }), {"position", "-1"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.capacity = 0; }), {"capacity"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.patterns = nullptr; }), {"pattern"}));
  EXPECT_TRUE(mentions(call([&](DecodeParams& p) { p.patterns = bad_patterns.data(); }), {"c = 7"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.head_dim = 0; }), {"head_dim", "got 0"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.head_dim = 300; }), {"300"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.heads = 0; }), {"heads"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.q = nullptr; }), {"q is null"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.k_cache = nullptr; }), {"k_cache is null"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.v_cache = nullptr; }), {"v_cache is null"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.out = nullptr; }), {"out is null"}));
  EXPECT_TRUE(mentions(call([](DecodeParams& p) { p.dtype = DType::f16; }), {"float16"}));
}

}  // namespace

namespace {

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
    std::vector<float> k(static_cast<size_t>(B * H * capacity * D)), v(k.size()), q(static_cast<size_t>(B * H * D));
    std::vector<float> k_columns(static_cast<size_t>(B * H * rows * D), kNaN), v_columns(k_columns.size(), kNaN);
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
        DecodeParams p;
        p.q = q.data();
        p.q_stride = Strides{H * D, D, 0};
        p.out_stride = Strides{H * D, D, 0};
        p.batch = B;
        p.heads = H;
        p.head_dim = D;
        p.capacity = capacity;
        p.position = i;
        p.patterns = patterns.data();
        p.k_cache = k.data();
        p.v_cache = v.data();
        p.k_stride = p.v_stride = Strides::contiguous(H, capacity, D);
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
        std::vector<float> k_window(static_cast<size_t>(B * H * columns * D), kNaN), v_window(k_window.size(), kNaN);
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
            for (int64_t d = 0; d < D; ++d) k_columns[(bh * rows + row) * D + d] = k[(bh * capacity + j) * D + d];
          }
        }
      }
    }
  }
}

}  // namespace
