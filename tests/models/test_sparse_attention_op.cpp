// stx::sparse_attention (and its packed form) against plain LibTorch masked attention: forward and the
// three gradients.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "stx/models/sparse_attention.h"

namespace {

using stx::kernels::Combination;
using stx::kernels::HeadPattern;
using stx::kernels::Pattern;

// [H, T, T] bool: true where head h lets query i attend key j.
at::Tensor allowed_mask(const std::vector<HeadPattern>& heads, int64_t n) {
  at::Tensor mask = at::zeros({static_cast<int64_t>(heads.size()), n, n}, at::kBool);
  auto m = mask.accessor<bool, 3>();
  for (size_t h = 0; h < heads.size(); ++h) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) m[h][i][j] = stx::kernels::attends(heads[h], i, j);
    }
  }
  return mask;
}

at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& allowed) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor s = at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-2, -1)) * scale;
  s = s.masked_fill(allowed.logical_not().unsqueeze(0), -std::numeric_limits<double>::infinity());
  at::Tensor p = at::softmax(s, -1);
  p = at::nan_to_num(p, 0.0);  // rows with nothing attended: zero output, like the kernels
  return at::matmul(p, v.to(at::kDouble));
}

struct OpCase {
  const char* name;
  Pattern pattern;
  int64_t l, c;
  Combination mode;
  int64_t n, heads, head_dim;
};

class SparseAttentionOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(SparseAttentionOp, ForwardAndGradientsMatchMaskedAttention) {
  const OpCase tc = GetParam();
  at::manual_seed(7);
  const int64_t batch = 2;
  const auto patterns = stx::kernels::layer_patterns(tc.pattern, tc.l, tc.c, static_cast<int>(tc.heads), tc.mode, 1);
  const auto layout = stx::kernels::cached_layout(tc.n, 32, patterns);

  // q, k, v as the model makes them: slices of one [B, T, 3, H, D] tensor, transposed, not contiguous.
  const at::Tensor qkv = at::randn({batch, tc.n, 3, tc.heads, tc.head_dim}).requires_grad_(true);
  const at::Tensor q = qkv.select(2, 0).transpose(1, 2);
  const at::Tensor k = qkv.select(2, 1).transpose(1, 2);
  const at::Tensor v = qkv.select(2, 2).transpose(1, 2);
  ASSERT_FALSE(q.is_contiguous());
  const at::Tensor out = stx::sparse_attention(q, k, v, layout);
  ASSERT_EQ(out.sizes(), q.sizes());

  const at::Tensor qkv_ref = qkv.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor expected = reference_attention(qkv_ref.select(2, 0).transpose(1, 2), qkv_ref.select(2, 1).transpose(1, 2),
                                                  qkv_ref.select(2, 2).transpose(1, 2), allowed_mask(patterns, tc.n));
  EXPECT_TRUE(at::allclose(out.to(at::kDouble), expected, 1e-4, 1e-5))
      << "max |diff| " << (out.to(at::kDouble) - expected).abs().max().item<double>();

  const at::Tensor weights = at::randn(out.sizes());  // a loss that weighs every output differently
  (out * weights).sum().backward();
  (expected * weights.to(at::kDouble)).sum().backward();
  const at::Tensor grad = qkv.grad().to(at::kDouble), grad_ref = qkv_ref.grad();
  EXPECT_TRUE(at::allclose(grad, grad_ref, 1e-4, 1e-4)) << "max |diff| " << (grad - grad_ref).abs().max().item<double>();

  // The packed form, as the model calls it: the same output, and the same gradient written packed.
  const at::Tensor qkv_packed = qkv.detach().clone().requires_grad_(true);
  const at::Tensor out_packed = stx::sparse_attention_packed(qkv_packed, layout);
  EXPECT_TRUE(at::equal(out_packed, out.detach()));
  (out_packed * weights).sum().backward();
  EXPECT_EQ(qkv_packed.grad().sizes(), qkv.sizes());
  EXPECT_TRUE(at::allclose(qkv_packed.grad().to(at::kDouble), grad_ref, 1e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, SparseAttentionOp,
    ::testing::Values(OpCase{"dense", Pattern::dense, 1, 1, Combination::merged, 70, 2, 16},
                      OpCase{"strided_merged", Pattern::strided, 9, 0, Combination::merged, 113, 2, 32},
                      OpCase{"strided_interleaved", Pattern::strided, 9, 0, Combination::interleaved, 100, 2, 16},
                      OpCase{"strided_multihead", Pattern::strided, 7, 0, Combination::multihead, 61, 4, 16},
                      OpCase{"fixed_merged", Pattern::fixed, 10, 3, Combination::merged, 113, 2, 32},
                      OpCase{"fixed_interleaved_a2", Pattern::fixed, 10, 3, Combination::interleaved, 57, 2, 16},
                      OpCase{"fixed_multihead", Pattern::fixed, 12, 3, Combination::multihead, 77, 4, 16}),
    [](const ::testing::TestParamInfo<OpCase>& info) { return std::string(info.param.name); });

TEST(SparseAttentionOpErrors, BadShapesAndDtypesAreRefused) {
  const auto layout = stx::kernels::cached_layout(16, 16, stx::kernels::layer_patterns(Pattern::strided, 4, 0, 2, Combination::merged));
  const at::Tensor q = at::randn({1, 2, 16, 8});
  EXPECT_THROW(stx::sparse_attention(q, q, at::randn({1, 2, 15, 8}), layout), c10::Error);
  EXPECT_THROW(stx::sparse_attention(q.to(at::kDouble), q.to(at::kDouble), q.to(at::kDouble), layout), std::exception);
  const at::Tensor wrong_heads = at::randn({1, 3, 16, 8});
  EXPECT_THROW(stx::sparse_attention(wrong_heads, wrong_heads, wrong_heads, layout), c10::Error);
  const at::Tensor wrong_length = at::randn({1, 2, 17, 8});
  EXPECT_THROW(stx::sparse_attention(wrong_length, wrong_length, wrong_length, layout), c10::Error);
  EXPECT_THROW(stx::sparse_attention_packed(at::randn({1, 16, 2, 2, 8}), layout), c10::Error);  // not 3 slices
  EXPECT_THROW(stx::sparse_attention_packed(at::randn({1, 16, 3, 2, 8}), nullptr), c10::Error);
}

TEST(SparseAttentionDecode, EqualsTheForwardRowAtEveryPosition) {
  at::manual_seed(3);
  const int64_t n = 45, heads = 2, d = 16;
  const auto patterns = stx::kernels::layer_patterns(Pattern::fixed, 8, 2, heads, Combination::merged);
  const at::Tensor q = at::randn({1, heads, n, d}), k = at::randn({1, heads, n, d}), v = at::randn({1, heads, n, d});
  const at::Tensor full = stx::sparse_attention(q, k, v, stx::kernels::cached_layout(n, 16, patterns));
  for (int64_t i = 0; i < n; ++i) {
    at::Tensor lse;
    const at::Tensor row = stx::sparse_attention_decode(q.select(2, i), k, v, i, patterns, &lse);
    ASSERT_TRUE(at::allclose(row, full.select(2, i), 1e-5, 1e-5)) << "position " << i;
    ASSERT_EQ(lse.sizes(), (std::vector<int64_t>{1, heads}));
  }
}

}  // namespace
