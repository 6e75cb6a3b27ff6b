// The fused forward (out and lse) against the double reference on every CPU path, and its input checks.
#include <gtest/gtest.h>

#include <cmath>
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
using stx::test::mentions;
using stx::test::Tensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f;  // output padding must keep it

class Forward : public ::testing::TestWithParam<KernelCase> {};

TEST_P(Forward, MatchesReferenceOnEveryCpuPath) {
  // given random q, k, v (padding, if any, is NaN so that reading it would show)
  const KernelCase& kc = GetParam();
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  const std::vector<HeadPattern> patterns = kc.patterns();
  const auto layout = cached_layout(T, kc.block, patterns);
  std::mt19937 rng = stx::test::case_rng(kc, 1);
  Tensor q(B, H, T, D, kc.storage, kNaN), k(B, H, T, D, kc.storage, kNaN), v(B, H, T, D, kc.storage, kNaN);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);

  // and the reference out_i = sum_{j in A(i)} softmax_j(scale q_i . k_j) v_j, lse_i = log sum exp
  const stx::test::ReferenceShape shape{B, H, T, D, kc.scale};
  std::vector<double> ref_out, ref_lse;
  stx::test::reference_forward(patterns, shape, q.to_double(), k.to_double(), v.to_double(), ref_out,
                               ref_lse);

  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(std::string("cpu path ") + to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    // when the kernel writes into outputs pre-filled with NaN
    Tensor out(B, H, T, D, kc.storage, kSentinel);
    out.fill(kNaN);
    std::vector<float> lse(static_cast<size_t>(B * H * T), kNaN);
    ForwardParams p;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.lse = lse.data();
    p.q_stride = q.strides();
    p.k_stride = k.strides();
    p.v_stride = v.strides();
    p.out_stride = out.strides();
    p.batch = B;
    p.heads = H;
    p.seq_len = T;
    p.head_dim = D;
    p.scale = kc.scale;
    p.layout = layout.get();
    ASSERT_NO_THROW(attention_forward(p));
    // then every element matches the reference, and nothing outside the logical tensor was written
    EXPECT_TRUE(stx::test::matches_reference("out", out.to_double(), ref_out, {B, H, T, D}));
    EXPECT_TRUE(stx::test::matches_reference("lse", stx::test::to_double(lse), ref_lse, {B, H, T}));
    EXPECT_EQ(out.padding_changed(), 0);
    EXPECT_EQ(active_cpu_isa(), isa);
  }
  EXPECT_EQ(active_cpu_isa(), best_cpu_isa());
}

INSTANTIATE_TEST_SUITE_P(Cases, Forward, ::testing::ValuesIn(stx::test::kernel_cases()),
                         stx::test::case_name);

TEST(CpuIsa, EverySupportedPathCanBeForcedAndTheBestRestored) {
  const std::vector<CpuIsa> paths = stx::test::supported_cpu_isas();
  EXPECT_EQ(paths.back(), best_cpu_isa());
  for (CpuIsa isa : paths) {
    {
      stx::test::ForcedCpuIsa forced(isa);
      EXPECT_EQ(active_cpu_isa(), isa);
    }
    EXPECT_EQ(active_cpu_isa(), best_cpu_isa());
  }
  if (best_cpu_isa() != CpuIsa::avx512) {
    EXPECT_THROW(force_cpu_isa(CpuIsa::avx512), Error);
  }
}

// ---- bad input ------------------------------------------------------------------------------------

// A valid small call that each check below breaks in one way.
struct ForwardFixture {
  static constexpr int64_t B = 1, H = 2, T = 16, D = 32;
  std::vector<float> q = std::vector<float>(B * H * T * D, 0.5f), k = q, v = q, out = q;
  std::vector<float> lse = std::vector<float>(B * H * T, 0.0f);
  std::shared_ptr<const Layout> layout =
      cached_layout(T, 16, layer_patterns(Pattern::dense, 0, 0, H, Combination::merged));
  ForwardParams params() {
    ForwardParams p;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.lse = lse.data();
    p.q_stride = p.k_stride = p.v_stride = p.out_stride = Strides::contiguous(H, T, D);
    p.batch = B;
    p.heads = H;
    p.seq_len = T;
    p.head_dim = D;
    p.layout = layout.get();
    return p;
  }
};

TEST(ForwardErrors, ValidCallGivesTheUniformAverage) {
  ForwardFixture f;
  ASSERT_NO_THROW(attention_forward(f.params()));
  // all keys equal and all values 0.5: every row averages to 0.5 and lse_i = s + log(i + 1)
  const double s = 0.25 * 32 / std::sqrt(32.0);
  for (int64_t i = 0; i < f.T; ++i) {
    EXPECT_NEAR(f.out[i * f.D], 0.5f, 1e-6);
    EXPECT_NEAR(f.lse[i], s + std::log(static_cast<double>(i + 1)), 1e-5);
  }
}

TEST(ForwardErrors, BadInputThrowsNamingTheProblem) {
  ForwardFixture f;
  auto call = [&](const std::function<void(ForwardParams&)>& breaks) {
    ForwardParams p = f.params();
    breaks(p);
    return error_message([&] { attention_forward(p); });
  };
  const auto other_n = cached_layout(17, 16, layer_patterns(Pattern::dense, 0, 0, 2, Combination::merged));
  EXPECT_TRUE(mentions(call([&](ForwardParams& p) { p.layout = other_n.get(); }), {"17", "16"}));
  const auto three_heads =
      cached_layout(16, 16, layer_patterns(Pattern::strided, 4, 0, 3, Combination::merged));
  EXPECT_TRUE(mentions(call([&](ForwardParams& p) { p.layout = three_heads.get(); }), {"3 head", "2 heads"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.layout = nullptr; }), {"layout"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.head_dim = 0; }), {"head_dim", "got 0"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.head_dim = 300; }), {"head_dim", "300"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.batch = 0; }), {"batch"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.q = nullptr; }), {"q is null"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.k = nullptr; }), {"k is null"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.v = nullptr; }), {"v is null"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.out = nullptr; }), {"out is null"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.lse = nullptr; }), {"lse is null"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.dtype = DType::f16; }), {"CPU", "float16"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.dtype = DType::bf16; }), {"bfloat16"}));
  EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.q_stride.seq = -1; }), {"stride"}));
  if (!built_with_cuda()) {
    EXPECT_TRUE(mentions(call([](ForwardParams& p) { p.device = Device::cuda; }), {"CUDA"}));
  }
}

}  // namespace
