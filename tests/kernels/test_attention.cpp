// The fused forward (out and lse) and the backward (dq, dk, dv) of every attention case, on every backend,
// against the double reference (backend.h).
#include <gtest/gtest.h>
#include <omp.h>

#include <random>
#include <string>
#include <vector>

#include "attention_cases.h"
#include "backend.h"
#include "reference.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "test_util.h"

namespace stx::test {
namespace {

using namespace stx::kernels;

// Inputs N(0, 1) of the case's shape and storage, as the backends hold them (rounded to the dtype);
// padding, if any, is NaN so that reading it would show.
Tensor random_input(const CaseInDtype& c, std::mt19937& rng) {
  const AttentionCase& kc = c.shape;
  Tensor t(kc.batch, kc.heads, kc.seq_len, kc.head_dim, kc.storage, kNaN);
  t.fill_normal(rng);
  return as_held_by(*backends_taking(c.dtype).back(), std::move(t), c.dtype);
}

// An output pre-filled with NaN, so an element the kernel leaves unwritten shows; its padding holds the
// sentinel, so an element written outside the logical tensor shows.
Tensor unwritten_output(const AttentionCase& kc) {
  Tensor t(kc.batch, kc.heads, kc.seq_len, kc.head_dim, kc.storage, kSentinel);
  t.fill(kNaN);
  return t;
}

ReferenceShape reference_shape(const AttentionCase& kc) {
  return {kc.batch, kc.heads, kc.seq_len, kc.head_dim, kc.scale};
}

double squared_norm(const std::vector<double>& x) {
  double norm = 0.0;
  for (double e : x) norm += e * e;
  return norm;
}

// Runs the CPU kernels with `threads` OpenMP threads while it lives (0: the default).
class ScopedThreadCount {
 public:
  explicit ScopedThreadCount(int threads) : default_(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ScopedThreadCount() { omp_set_num_threads(default_); }
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int default_;
};

class Forward : public CaseTest {};

TEST_P(Forward, MatchesReference) {
  // given random q, k, v in the dtype
  const AttentionCase& kc = GetParam().shape;
  const DType dtype = GetParam().dtype;
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  std::mt19937 rng = case_rng(kc, 1);
  const Tensor q = random_input(GetParam(), rng), k = random_input(GetParam(), rng),
               v = random_input(GetParam(), rng);

  // and the reference out_i = sum_{j in A(i)} softmax_j(scale q_i . k_j) v_j, lse_i = log sum exp
  std::vector<double> ref_out, ref_lse;
  reference_forward(kc.patterns(), reference_shape(kc), q.to_double(), k.to_double(), v.to_double(), ref_out,
                    ref_lse);

  const auto layout = cached_layout(T, kc.block, kc.patterns());
  for (const Backend* backend : backends()) {
    SCOPED_TRACE(backend->name());
    // when the kernel writes into outputs pre-filled with NaN
    BackendTensor held_q(*backend, q, dtype), held_k(*backend, k, dtype), held_v(*backend, v, dtype),
        out(*backend, unwritten_output(kc), dtype);
    const auto lse = backend->upload(std::vector<float>(static_cast<size_t>(B * H * T), kNaN), DType::f32);
    ASSERT_NO_THROW(run_forward(*backend, kc, dtype, *layout, held_q, held_k, held_v, out, *lse));
    out.read_back();

    // then every element matches the reference, and nothing outside the logical tensor was written
    const Tolerances tol = backend->tolerances(dtype);
    EXPECT_TRUE(matches_reference("out", out.host.to_double(), ref_out, {B, H, T, D}, tol.values));
    EXPECT_TRUE(matches_reference("lse", to_double(lse->read()), ref_lse, {B, H, T}, tol.lse));
    EXPECT_EQ(out.host.padding_changed(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Forward, ::testing::ValuesIn(in_every_dtype(attention_cases())),
                         case_in_dtype_name);

class Backward : public CaseTest {};

TEST_P(Backward, GradientsMatchReference) {
  // given random q, k, v, dout in the dtype, and one backend's forward out and lse: every backend's backward
  // and the reference gradients get the same, so that this test sees the backward alone
  const AttentionCase& kc = GetParam().shape;
  const DType dtype = GetParam().dtype;
  const int64_t B = kc.batch, H = kc.heads, T = kc.seq_len, D = kc.head_dim;
  std::mt19937 rng = case_rng(kc, 2);
  const Tensor q = random_input(GetParam(), rng), k = random_input(GetParam(), rng),
               v = random_input(GetParam(), rng), dout = random_input(GetParam(), rng);
  const auto layout = cached_layout(T, kc.block, kc.patterns());
  const Backend& fastest = *backends().back();  // the CPU paths come slowest first
  BackendTensor forward_q(fastest, q, dtype), forward_k(fastest, k, dtype), forward_v(fastest, v, dtype),
      forward_out(fastest, Tensor(B, H, T, D, kc.storage, kNaN), dtype);
  const auto forward_lse =
      fastest.upload(std::vector<float>(static_cast<size_t>(B * H * T), kNaN), DType::f32);
  ASSERT_NO_THROW(
      run_forward(fastest, kc, dtype, *layout, forward_q, forward_k, forward_v, forward_out, *forward_lse));
  forward_out.read_back();
  const Tensor& out = forward_out.host;
  const std::vector<float> lse = forward_lse->read();

  // and the reference gradients
  std::vector<double> ref_dq, ref_dk, ref_dv;
  reference_backward(kc.patterns(), reference_shape(kc), q.to_double(), k.to_double(), v.to_double(),
                     out.to_double(), to_double(lse), dout.to_double(), ref_dq, ref_dk, ref_dv);

  for (const Backend* backend : backends()) {
    const Tolerances tol = backend->tolerances(dtype);
    const double gradient_floor = tol.gradients_against_dv ? squared_norm(ref_dv) : 0.0;
    // Small cases also run on the CPU with more threads than cores and than work items, as on a many-core
    // desktop: threads with nothing to do must still meet the others where the results are summed.
    std::vector<int> thread_counts = {0};
    if (backend->device() == Device::cpu && B * H * T <= 4096) thread_counts.push_back(13);
    for (int threads : thread_counts) {
      SCOPED_TRACE(backend->name() + (threads > 0 ? ", " + std::to_string(threads) + " threads" : ""));
      // when the kernel overwrites gradients pre-filled with NaN (keys no query attends must become 0)
      BackendTensor held_q(*backend, q, dtype), held_k(*backend, k, dtype), held_v(*backend, v, dtype),
          held_out(*backend, out, dtype), held_dout(*backend, dout, dtype),
          dq(*backend, unwritten_output(kc), dtype), dk(*backend, unwritten_output(kc), dtype),
          dv(*backend, unwritten_output(kc), dtype);
      const auto held_lse = backend->upload(lse, DType::f32);
      BackwardParams p;
      p.q = held_q.data();
      p.k = held_k.data();
      p.v = held_v.data();
      p.out = held_out.data();
      p.dout = held_dout.data();
      p.lse = static_cast<const float*>(held_lse->data());
      p.dq = dq.data();
      p.dk = dk.data();
      p.dv = dv.data();
      p.q_stride = held_q.strides();
      p.k_stride = held_k.strides();
      p.v_stride = held_v.strides();
      p.out_stride = held_out.strides();
      p.dout_stride = held_dout.strides();
      p.dq_stride = dq.strides();
      p.dk_stride = dk.strides();
      p.dv_stride = dv.strides();
      p.batch = B;
      p.heads = H;
      p.seq_len = T;
      p.head_dim = D;
      p.scale = kc.scale;
      p.dtype = dtype;
      p.layout = layout.get();
      {
        ScopedThreadCount thread_count(threads);
        ASSERT_NO_THROW(backend->backward(p));
      }
      dq.read_back();
      dk.read_back();
      dv.read_back();
      // then
      EXPECT_TRUE(
          matches_reference("dq", dq.host.to_double(), ref_dq, {B, H, T, D}, tol.values, gradient_floor));
      EXPECT_TRUE(
          matches_reference("dk", dk.host.to_double(), ref_dk, {B, H, T, D}, tol.values, gradient_floor));
      EXPECT_TRUE(matches_reference("dv", dv.host.to_double(), ref_dv, {B, H, T, D}, tol.values));
      EXPECT_EQ(dq.host.padding_changed() + dk.host.padding_changed() + dv.host.padding_changed(), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Backward, ::testing::ValuesIn(in_every_dtype(attention_cases())),
                         case_in_dtype_name);

}  // namespace
}  // namespace stx::test
