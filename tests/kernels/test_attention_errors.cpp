// The attention entry points' input checks: each bad input throws an Error naming the problem. And the
// CPU path forcing that the CPU backends rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/error.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;
using stx::test::error_message;
using stx::test::mentions;

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

// ---- forward --------------------------------------------------------------------------------------

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

// ---- backward -------------------------------------------------------------------------------------

TEST(BackwardErrors, BadInputThrowsNamingTheProblem) {
  constexpr int64_t B = 1, H = 2, T = 16, D = 32;
  std::vector<float> buffer(B * H * T * D, 0.5f), dq = buffer, dk = buffer, dv = buffer;
  std::vector<float> lse(B * H * T, 0.0f);
  const auto layout = cached_layout(T, 16, layer_patterns(Pattern::fixed, 6, 2, H, Combination::multihead));
  BackwardParams valid;
  valid.q = valid.k = valid.v = valid.out = valid.dout = buffer.data();
  valid.lse = lse.data();
  valid.dq = dq.data();
  valid.dk = dk.data();
  valid.dv = dv.data();
  valid.q_stride = valid.k_stride = valid.v_stride = valid.out_stride = valid.dout_stride = valid.dq_stride =
      valid.dk_stride = valid.dv_stride = Strides::contiguous(H, T, D);
  valid.batch = B;
  valid.heads = H;
  valid.seq_len = T;
  valid.head_dim = D;
  valid.layout = layout.get();
  ASSERT_NO_THROW(attention_backward(valid));

  auto call = [&](const std::function<void(BackwardParams&)>& breaks) {
    BackwardParams p = valid;
    breaks(p);
    return error_message([&] { attention_backward(p); });
  };
  const auto other_n = cached_layout(15, 16, layer_patterns(Pattern::fixed, 6, 2, H, Combination::multihead));
  EXPECT_TRUE(mentions(call([&](BackwardParams& p) { p.layout = other_n.get(); }), {"15", "16"}));
  const auto one_head = cached_layout(T, 16, layer_patterns(Pattern::fixed, 6, 2, 1, Combination::multihead));
  EXPECT_TRUE(mentions(call([&](BackwardParams& p) { p.layout = one_head.get(); }), {"1 head"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.head_dim = 0; }), {"head_dim"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.head_dim = 300; }), {"300"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.dout = nullptr; }), {"dout is null"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.dq = nullptr; }), {"dq is null"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.dk = nullptr; }), {"dk is null"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.dv = nullptr; }), {"dv is null"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.lse = nullptr; }), {"lse is null"}));
  EXPECT_TRUE(mentions(call([](BackwardParams& p) { p.dtype = DType::f16; }), {"float16"}));
}

// ---- decode ---------------------------------------------------------------------------------------

TEST(DecodeErrors, BadInputThrowsNamingTheProblem) {
  constexpr int64_t B = 1, H = 2, D = 32, capacity = 20;
  std::vector<float> q(B * H * D, 0.5f), out(B * H * D, 0.0f), lse(B * H, 0.0f);
  std::vector<float> cache(B * H * capacity * D, 0.5f);
  const std::vector<HeadPattern> patterns = layer_patterns(Pattern::strided, 5, 0, H, Combination::multihead);
  const std::vector<HeadPattern> bad_patterns = {HeadPattern::fixed(6, 2), HeadPattern::fixed(6, 7)};
  DecodeParams valid = stx::test::contiguous_decode(B, H, D, capacity, capacity, patterns);
  valid.q = q.data();
  valid.k_cache = valid.v_cache = cache.data();
  valid.out = out.data();
  valid.lse = lse.data();
  valid.position = capacity - 1;
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
