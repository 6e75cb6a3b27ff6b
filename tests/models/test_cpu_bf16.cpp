// Mixed precision on the CPU: precision bf16 runs the linear layers in bf16 (LibTorch's CPU autocast, oneDNN)
// where the processor has AVX512-BF16, and attention and GELU in our fp32 kernels; elsewhere the model runs
// in fp32. Each test asserts the path this processor takes, and says which.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <cstdio>

#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "tiny_model.h"

namespace {

using stx::models::ModelConfig;
using stx::models::Precision;
using stx::models::SparseTransformer;

ModelConfig tiny(Precision precision, bool recompute = false) {
  ModelConfig c = stx::test::tiny_model_config(stx::models::DataKind::text);
  c.context = 48;
  c.d_model = 64;
  c.d_ff = 128;
  c.pattern = stx::kernels::Pattern::strided;
  c.stride = 8;
  c.precision = precision;
  c.recompute = recompute;
  return c;
}

// Two models with the same weights, one per config.
std::pair<SparseTransformer, SparseTransformer> twins(const ModelConfig& a, const ModelConfig& b) {
  at::manual_seed(5);
  SparseTransformer first(a);
  at::manual_seed(5);
  SparseTransformer second(b);
  return {first, second};
}

at::Tensor loss_of(SparseTransformer& model, const at::Tensor& bytes) {
  return at::cross_entropy_loss(model->forward(bytes).reshape({-1, 256}), bytes.reshape({-1}));
}

TEST(CpuBf16, EffectivePrecision) {
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    EXPECT_EQ(stx::models::effective_precision(p, true), p) << "CUDA runs what the config says";
  }
  EXPECT_EQ(stx::models::effective_precision(Precision::fp32, false), Precision::fp32);
  EXPECT_EQ(stx::models::effective_precision(Precision::fp16, false), Precision::fp32) << "no fp16 on the CPU";
  EXPECT_EQ(stx::models::effective_precision(Precision::bf16, false),
            stx::models::cpu_has_fast_bf16() ? Precision::bf16 : Precision::fp32);
}

TEST(CpuBf16, LogitsStayCloseToFp32AndAreFloat) {
  auto [exact, mixed] = twins(tiny(Precision::fp32), tiny(Precision::bf16));
  at::manual_seed(2);
  const at::Tensor bytes = at::randint(0, 256, {2, 48}, at::kLong);
  at::NoGradGuard no_grad;
  const at::Tensor want = exact->forward(bytes), got = mixed->forward(bytes);
  EXPECT_EQ(got.scalar_type(), at::kFloat);
  const double diff = (got - want).abs().max().item<double>();
  const double scale = want.abs().max().item<double>();
  std::printf("bf16 on this CPU: %s; largest logit difference %.3e of %.3e\n",
              stx::models::cpu_has_fast_bf16() ? "yes" : "no, fp32", diff, scale);
  if (stx::models::cpu_has_fast_bf16()) {
    EXPECT_GT(diff, 0.0) << "the linear layers did not run in bf16";
    EXPECT_LT(diff, 0.02 * scale + 1e-3) << "bf16 keeps 8 bits of mantissa: within a few percent";
  } else {
    EXPECT_EQ(diff, 0.0) << "without AVX512-BF16 a bf16 model must run exactly as fp32";
  }
}

TEST(CpuBf16, GradientsFollowFp32AndRecomputationReplaysTheBf16Branch) {
  at::manual_seed(3);
  const at::Tensor bytes = at::randint(0, 256, {2, 48}, at::kLong);
  auto [exact, mixed] = twins(tiny(Precision::fp32), tiny(Precision::bf16));
  auto [plain, recomputed] = twins(tiny(Precision::bf16), tiny(Precision::bf16, true));
  loss_of(exact, bytes).backward();
  loss_of(mixed, bytes).backward();
  const at::Tensor plain_loss = loss_of(plain, bytes), recomputed_loss = loss_of(recomputed, bytes);
  EXPECT_EQ(plain_loss.item<float>(), recomputed_loss.item<float>()) << "the same forward, bf16 or not";
  plain_loss.backward();
  recomputed_loss.backward();
  const auto pe = exact->parameters(), pm = mixed->parameters(), pp = plain->parameters(), pr = recomputed->parameters();
  for (size_t i = 0; i < pe.size(); ++i) {
    ASSERT_TRUE(pm[i].grad().defined()) << "parameter " << i;
    EXPECT_EQ(pm[i].grad().scalar_type(), at::kFloat) << "fp32 weights get fp32 gradients";
    EXPECT_TRUE(at::isfinite(pm[i].grad()).all().item<bool>()) << "parameter " << i;
    const double norm = pe[i].grad().norm().item<double>();
    const double off = (pm[i].grad() - pe[i].grad()).norm().item<double>();
    EXPECT_LE(off, 0.05 * norm + 1e-6) << "parameter " << i << ": bf16 gradient strays from fp32";
    // Recomputation runs the branch again under the forward's autocast, so its gradients are the same
    // computation: equal up to the order of float sums.
    EXPECT_TRUE(at::allclose(pp[i].grad(), pr[i].grad(), 1e-3, 1e-6)) << "parameter " << i;
  }
}

TEST(CpuBf16, ATinyModelOverfitsASequence) {
  at::manual_seed(7);
  SparseTransformer model(tiny(Precision::bf16));
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3));
  at::manual_seed(8);
  const at::Tensor bytes = at::randint(0, 256, {1, 48}, at::kLong);
  double bits = 0;
  for (int step = 0; step < 200; ++step) {
    optimizer.zero_grad();
    const at::Tensor loss = loss_of(model, bytes);
    loss.backward();
    optimizer.step();
    bits = loss.item<double>() / std::log(2.0);
  }
  std::printf("bf16 %s: bits/byte after 200 steps %.3f\n", stx::models::cpu_has_fast_bf16() ? "in hardware" : "as fp32",
              bits);
  EXPECT_LT(bits, 0.5);
}

}  // namespace
