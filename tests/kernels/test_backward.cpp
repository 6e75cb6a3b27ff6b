// The backward (dq, dk, dv) against the double reference on every CPU path, and its input checks.
#include <gtest/gtest.h>
#include <omp.h>

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
constexpr float kSentinel = 12345.0f;

class Backward : public ::testing::TestWithParam<KernelCase> {};

TEST_P(Backward, GradientsMatchReferenceOnEveryCpuPath) {
  // given random q, k, v, dout, and the forward's out and lse taken from the reference (rounded to fp32),
  // so this test sees the backward alone
  const KernelCase& kc = GetParam();
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  const std::vector<HeadPattern> patterns = kc.patterns();
  const auto layout = cached_layout(T, kc.block, patterns);
  std::mt19937 rng = stx::test::case_rng(kc, 2);
  Tensor q(B, H, T, D, kc.storage, kNaN), k(B, H, T, D, kc.storage, kNaN), v(B, H, T, D, kc.storage, kNaN);
  Tensor dout(B, H, T, D, kc.storage, kNaN), out(B, H, T, D, kc.storage, kNaN);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  dout.fill_normal(rng);

  const stx::test::ReferenceShape shape{B, H, T, D, kc.scale};
  const std::vector<double> qd = q.to_double(), kd = k.to_double(), vd = v.to_double();
  std::vector<double> ref_out, ref_lse, ref_dq, ref_dk, ref_dv;
  stx::test::reference_forward(patterns, shape, qd, kd, vd, ref_out, ref_lse);
  out.assign(ref_out);
  std::vector<float> lse(ref_lse.begin(), ref_lse.end());
  // the reference gradients use the same rounded out and lse that the kernel gets
  stx::test::reference_backward(patterns, shape, qd, kd, vd, out.to_double(), stx::test::to_double(lse),
                                dout.to_double(), ref_dq, ref_dk, ref_dv);

  // Small cases also run with more threads than cores and than work items, as on a many-core desktop:
  // threads with nothing to do must still meet the others where the results are summed.
  const int default_threads = omp_get_max_threads();
  std::vector<int> thread_counts = {default_threads};
  if (B * H * T <= 4096) thread_counts.push_back(13);
  for (CpuIsa isa : stx::test::supported_cpu_isas())
    for (int threads : thread_counts) {
      SCOPED_TRACE(std::string("cpu path ") + to_string(isa) + ", " + std::to_string(threads) + " threads");
      stx::test::ForcedCpuIsa forced(isa);
      omp_set_num_threads(threads);
      // when the kernel overwrites gradients pre-filled with NaN (keys no query attends must become 0)
      Tensor dq(B, H, T, D, kc.storage, kSentinel), dk(B, H, T, D, kc.storage, kSentinel),
          dv(B, H, T, D, kc.storage, kSentinel);
      dq.fill(kNaN);
      dk.fill(kNaN);
      dv.fill(kNaN);
      BackwardParams p;
      p.q = q.data();
      p.k = k.data();
      p.v = v.data();
      p.out = out.data();
      p.dout = dout.data();
      p.lse = lse.data();
      p.dq = dq.data();
      p.dk = dk.data();
      p.dv = dv.data();
      p.q_stride = q.strides();
      p.k_stride = k.strides();
      p.v_stride = v.strides();
      p.out_stride = out.strides();
      p.dout_stride = dout.strides();
      p.dq_stride = dq.strides();
      p.dk_stride = dk.strides();
      p.dv_stride = dv.strides();
      p.batch = B;
      p.heads = H;
      p.seq_len = T;
      p.head_dim = D;
      p.scale = kc.scale;
      p.layout = layout.get();
      ASSERT_NO_THROW(attention_backward(p));
      omp_set_num_threads(default_threads);
      // then
      EXPECT_TRUE(stx::test::matches_reference("dq", dq.to_double(), ref_dq, {B, H, T, D}));
      EXPECT_TRUE(stx::test::matches_reference("dk", dk.to_double(), ref_dk, {B, H, T, D}));
      EXPECT_TRUE(stx::test::matches_reference("dv", dv.to_double(), ref_dv, {B, H, T, D}));
      EXPECT_EQ(dq.padding_changed() + dk.padding_changed() + dv.padding_changed(), 0);
    }
  EXPECT_EQ(active_cpu_isa(), best_cpu_isa());
}

INSTANTIATE_TEST_SUITE_P(Cases, Backward, ::testing::ValuesIn(stx::test::kernel_cases()),
                         stx::test::case_name);

// The reference itself: its analytic gradient agrees with central finite differences of a scalar loss.
// Without this, a wrong reference could agree with an equally wrong kernel.
TEST(BackwardReference, MatchesFiniteDifferences) {
  // the third head has empty rows (fixed A2 alone before the first summary cell)
  const stx::test::ReferenceShape shape{1, 3, 23, 8, 0.0};
  const std::vector<HeadPattern> patterns = {HeadPattern::fixed(6, 2, Subset::both, 1),
                                             HeadPattern::strided(5, Subset::a2),
                                             HeadPattern::fixed(6, 2, Subset::a2)};
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto random = [&] {
    std::vector<double> x(static_cast<size_t>(shape.elements()));
    for (double& e : x) e = normal(rng);
    return x;
  };
  std::vector<double> q = random(), k = random(), v = random(), w = random();
  // loss = sum out * w, so dout = w
  auto loss = [&](const std::vector<double>& q2, const std::vector<double>& k2,
                  const std::vector<double>& v2) {
    std::vector<double> out, lse;
    stx::test::reference_forward(patterns, shape, q2, k2, v2, out, lse);
    double s = 0.0;
    for (size_t e = 0; e < out.size(); ++e) s += out[e] * w[e];
    return s;
  };
  std::vector<double> out, lse, dq, dk, dv;
  stx::test::reference_forward(patterns, shape, q, k, v, out, lse);
  stx::test::reference_backward(patterns, shape, q, k, v, out, lse, w, dq, dk, dv);
  const double h = 1e-5;
  auto numeric = [&](std::vector<double>& x, size_t e) {
    const double keep = x[e];
    x[e] = keep + h;
    const double up = loss(q, k, v);
    x[e] = keep - h;
    const double down = loss(q, k, v);
    x[e] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t e = 0; e < q.size(); e += 3) {
    EXPECT_NEAR(dq[e], numeric(q, e), 1e-6) << "dq " << e;
    EXPECT_NEAR(dk[e], numeric(k, e), 1e-6) << "dk " << e;
    EXPECT_NEAR(dv[e], numeric(v, e), 1e-6) << "dv " << e;
  }
}

// ---- bad input ------------------------------------------------------------------------------------

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

}  // namespace
