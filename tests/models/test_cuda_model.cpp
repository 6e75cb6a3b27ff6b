// The model-level CUDA path against the CPU: the sparse attention op (three strided views and the packed
// [B, T, 3, H, D] form), the fused GELU, a whole SparseTransformer (logits, gradients, mixed precision,
// recomputation) and moving a model between devices. A GPU machine runs these with
// --gtest_filter='*Cuda*'; without a CUDA device every test skips.
//
// Errors are max |actual - expected| / max |expected| over a whole tensor: one number that a wrong row,
// head or tail block cannot hide in (a mean would dilute it), and that elements near zero do not blow up.
// Each comparison prints its error, so a GPU run's log shows the margin left to the tolerance.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_attention.h"
#include "stx/models/sparse_transformer.h"

namespace {

using stx::kernels::Combination;
using stx::kernels::Pattern;
using stx::models::ModelConfig;
using stx::models::Precision;
using stx::models::SparseTransformer;

// The base of every fixture here: without a CUDA device the test skips, saying so.
template <class Base>
class NeedsCuda : public Base {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device: the model-level CUDA tests were compiled but not run";
    }
  }
};

double largest(const at::Tensor& t) { return t.detach().abs().max().to(at::kCPU).item<double>(); }

// max |actual - expected| / scale, in double on the CPU; scale defaults to max |expected|.
double max_error(const at::Tensor& actual, const at::Tensor& expected, double scale = 0.0) {
  const at::Tensor a = actual.detach().to(at::kCPU).to(at::kDouble);
  const at::Tensor e = expected.detach().to(at::kCPU).to(at::kDouble);
  if (scale <= 0.0) scale = largest(e);
  return (a - e).abs().max().item<double>() / std::max(scale, 1e-30);
}

bool all_finite(const at::Tensor& t) { return at::isfinite(t.detach().to(at::kCPU)).all().item<bool>(); }

// Checks shape, finiteness and max_error <= tolerance, printing the error; returns it.
double expect_close(const at::Tensor& actual, const at::Tensor& expected, double tolerance,
                    const std::string& what, double scale = 0.0) {
  EXPECT_EQ(actual.sizes(), expected.sizes()) << what;
  if (actual.sizes() != expected.sizes()) return 1.0;
  EXPECT_TRUE(all_finite(actual)) << what << " has a NaN or an infinity";
  const double error = max_error(actual, expected, scale);
  EXPECT_LE(error, tolerance) << what;
  std::printf("[ measured ] %s: %.2e (tolerance %.0e)\n", what.c_str(), error, tolerance);
  return error;
}

// ---- the op: CUDA against the CPU ---------------------------------------------------------------------

struct OpCase {
  const char* name;
  Pattern pattern;
  Combination mode;
  int64_t l, c;  // stride and summary
  int layer;     // interleaved: odd layers attend A2
  int64_t n, heads, head_dim;
  int block;
};

// No n is a multiple of the block; head_dim 48 is below the kernels' 64-wide tile, 128 uses the next one.
const OpCase kOpCases[] = {
    {"strided_n1_h1_d32", Pattern::strided, Combination::merged, 9, 0, 0, 1, 1, 32, 32},
    {"strided_n63_h2_d64", Pattern::strided, Combination::merged, 9, 0, 0, 63, 2, 64, 32},
    // A2 of the fixed pattern: the first rows have no keys at all (zero output and gradients).
    {"fixed_a2_n63_h1_d64", Pattern::fixed, Combination::interleaved, 10, 3, 1, 63, 1, 64, 16},
    {"fixed_n200_h3_d32", Pattern::fixed, Combination::merged, 24, 5, 0, 200, 3, 32, 64},
    {"strided_a2_n200_h2_d64", Pattern::strided, Combination::interleaved, 13, 0, 1, 200, 2, 64, 16},
    {"strided_n200_h2_d128", Pattern::strided, Combination::merged, 20, 0, 0, 200, 2, 128, 32},
    {"strided_multihead_n1000_h4_d64", Pattern::strided, Combination::multihead, 30, 0, 0, 1000, 4, 64, 32},
    {"fixed_multihead_n1000_h4_d32", Pattern::fixed, Combination::multihead, 48, 12, 0, 1000, 4, 32, 64},
    {"fixed_n1000_h2_d48", Pattern::fixed, Combination::merged, 40, 7, 0, 1000, 2, 48, 32},
};
constexpr int64_t kBatch = 2;

// gtest prints this instead of the case's raw bytes.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

std::shared_ptr<const stx::kernels::Layout> layout_of(const OpCase& c) {
  return stx::kernels::cached_layout(
      c.n, c.block,
      stx::kernels::layer_patterns(c.pattern, c.l, c.c, static_cast<int>(c.heads), c.mode, c.layer));
}

struct Attended {
  at::Tensor out;   // [B, H, T, D]
  at::Tensor grad;  // of qkv: [B, T, 3, H, D]
};

// The op on a leaf copy of qkv ([B, T, 3, H, D]: its device and dtype), back-propagating dout: through
// sparse_attention_packed, or through sparse_attention on the three strided views q, k, v.
Attended attend(const at::Tensor& qkv, const at::Tensor& dout,
                const std::shared_ptr<const stx::kernels::Layout>& layout, bool packed) {
  const at::Tensor leaf = qkv.detach().clone().requires_grad_(true);
  const at::Tensor out =
      packed ? stx::sparse_attention_packed(leaf, layout)
             : stx::sparse_attention(leaf.select(2, 0).transpose(1, 2), leaf.select(2, 1).transpose(1, 2),
                                     leaf.select(2, 2).transpose(1, 2), layout);
  out.backward(dout);
  return {out.detach(), leaf.grad()};
}

// The three gradients of `actual` against `expected`, each relative to the largest of all three (dq and
// dk are exactly zero where a row attends only itself, e.g. n = 1).
void expect_same_qkv_gradients(const at::Tensor& actual, const at::Tensor& expected, double tolerance,
                               const std::string& what) {
  const double scale = largest(expected);
  const char* names[] = {"dq", "dk", "dv"};
  for (int64_t i = 0; i < 3; ++i) {
    expect_close(actual.select(2, i), expected.select(2, i), tolerance, what + " " + names[i], scale);
  }
}

class CudaSparseAttentionOp : public NeedsCuda<::testing::TestWithParam<OpCase>> {};

TEST_P(CudaSparseAttentionOp, Fp32ForwardAndGradientsMatchTheCpu) {
  const OpCase& tc = GetParam();
  const auto layout = layout_of(tc);
  at::manual_seed(7);
  const at::Tensor qkv = at::randn({kBatch, tc.n, 3, tc.heads, tc.head_dim});
  const at::Tensor dout = at::randn({kBatch, tc.heads, tc.n, tc.head_dim});
  const Attended cpu = attend(qkv, dout, layout, false);
  const Attended cuda = attend(qkv.to(at::kCUDA), dout.to(at::kCUDA), layout, false);
  ASSERT_TRUE(cuda.out.is_cuda() && cuda.grad.is_cuda());
  // Both sides sum the same fp32 products (fewer than 100 keys a row here) in another order, with another
  // exp (CUDA's fast one is off by a few ulp): below 1e-6 of the largest value (an H100 measured at most
  // 6e-7 forward, 8e-7 for the gradients). 1e-5 is the bound for both.
  expect_close(cuda.out, cpu.out, 1e-5, "out");
  expect_same_qkv_gradients(cuda.grad, cpu.grad, 1e-5, "fp32");
  // The packed form runs the same deterministic kernels on the same values, writing its gradient packed.
  const Attended packed = attend(qkv.to(at::kCUDA), dout.to(at::kCUDA), layout, true);
  EXPECT_TRUE(at::equal(packed.out, cuda.out)) << "packed forward";
  EXPECT_TRUE(at::equal(packed.grad, cuda.grad)) << "packed gradient";
}

TEST_P(CudaSparseAttentionOp, HalfAndBfloat16MatchTheCpuFp32Result) {
  const OpCase& tc = GetParam();
  const auto layout = layout_of(tc);
  at::manual_seed(8);
  const at::Tensor qkv32 = at::randn({kBatch, tc.n, 3, tc.heads, tc.head_dim});
  const at::Tensor dout32 = at::randn({kBatch, tc.heads, tc.n, tc.head_dim});
  // Each dtype's inputs rounded first, and the CPU's fp32 op given the rounded values: what is left is the
  // kernel's own error. The kernels accumulate in fp32 and round their results once, by at most 2^-11
  // (fp16) or 2^-8 (bf16) of a value; the backward also reads the rounded output back. The bounds are 8x
  // and 5x that (an H100 measured at most 3.6e-4 for fp16 and 2.9e-3 for bf16).
  const struct {
    at::ScalarType dtype;
    double out_tolerance, grad_tolerance;
  } dtypes[] = {{at::kHalf, 4e-3, 4e-3}, {at::kBFloat16, 2e-2, 2e-2}};
  for (const auto& d : dtypes) {
    const std::string name = d.dtype == at::kHalf ? "fp16" : "bf16";
    const at::Tensor qkv = qkv32.to(d.dtype), dout = dout32.to(d.dtype);
    const Attended cpu = attend(qkv.to(at::kFloat), dout.to(at::kFloat), layout, false);
    for (bool packed : {true, false}) {
      const std::string what = name + (packed ? " packed" : " views");
      const Attended cuda = attend(qkv.to(at::kCUDA), dout.to(at::kCUDA), layout, packed);
      EXPECT_EQ(cuda.out.scalar_type(), d.dtype) << what;
      EXPECT_EQ(cuda.grad.scalar_type(), d.dtype) << what;
      expect_close(cuda.out, cpu.out, d.out_tolerance, what + " out");
      expect_same_qkv_gradients(cuda.grad, cpu.grad, d.grad_tolerance, what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaSparseAttentionOp, ::testing::ValuesIn(kOpCases),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                           return std::string(info.param.name);
                         });

// The message of what f throws, or "" when it returns.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class CudaSparseAttentionOpErrors : public NeedsCuda<::testing::Test> {};

TEST_F(CudaSparseAttentionOpErrors, UnsupportedInputsAreRefusedWithAMessageNotWrongNumbers) {
  const auto layout = stx::kernels::cached_layout(
      40, 16, stx::kernels::layer_patterns(Pattern::strided, 6, 0, 2, Combination::merged));
  const auto cuda = [](std::vector<int64_t> sizes, at::ScalarType dtype = at::kFloat) {
    return at::randn(sizes, at::TensorOptions().dtype(dtype).device(at::kCUDA));
  };
  const auto expect_refused = [](const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos)
        << "want an error naming '" << needle << "', got: '" << message << "'";
  };
  // Any head_dim in 1..256 runs (the kernels pad to a tile of 64, 128 or 256); above that nothing runs.
  const at::Tensor wide = cuda({1, 2, 40, 257});
  expect_refused(error_of([&] { stx::sparse_attention(wide, wide, wide, layout); }), "head_dim");
  const at::Tensor wide_packed = cuda({1, 40, 3, 2, 257});
  expect_refused(error_of([&] { stx::sparse_attention_packed(wide_packed, layout); }), "head_dim");
  const at::Tensor doubles = cuda({1, 2, 40, 32}, at::kDouble);
  expect_refused(error_of([&] { stx::sparse_attention(doubles, doubles, doubles, layout); }), "dtype");
  const at::Tensor q = cuda({1, 2, 40, 32});
  expect_refused(error_of([&] { stx::sparse_attention(q, q.cpu(), q.cpu(), layout); }), "same device");
  const at::Tensor strided_last = cuda({1, 2, 32, 40}).transpose(2, 3);  // [1, 2, 40, 32], last stride 40
  expect_refused(error_of([&] { stx::sparse_attention(strided_last, strided_last, strided_last, layout); }),
                 "contiguous last dimension");
  const at::Tensor longer = cuda({1, 2, 41, 32});
  expect_refused(error_of([&] { stx::sparse_attention(longer, longer, longer, layout); }), "layout");
}

// ---- the fused GELU ----------------------------------------------------------------------------------

class CudaGeluSigmoid : public NeedsCuda<::testing::Test> {};

TEST_F(CudaGeluSigmoid, ForwardAndBackwardMatchTheCpu) {
  at::manual_seed(3);
  const at::Tensor x32 = (at::randn({1001, 37}) * 4.0).t();  // a transposed view, an odd count
  const at::Tensor dy32 = at::randn({37, 1001}) * 2.0;
  // Elementwise, no sums: fp32 differs by CUDA's fast exp, a few ulp, and by the cancellation in
  // s + 1.702 x s (1 - s) near its zero, about 1e-7 of |dy|. fp16 and bf16 results are rounded once
  // (2^-11, 2^-8 of the value): twice that as rtol.
  const struct {
    at::ScalarType dtype;
    double rtol, atol;
  } dtypes[] = {{at::kFloat, 1e-5, 1e-5}, {at::kHalf, 1e-3, 1e-5}, {at::kBFloat16, 8e-3, 1e-5}};
  for (const auto& d : dtypes) {
    SCOPED_TRACE(c10::toString(d.dtype));
    const at::Tensor x = x32.to(d.dtype), dy = dy32.to(d.dtype);
    const at::Tensor x_cpu = x.to(at::kFloat).detach().clone().requires_grad_(true);
    const at::Tensor y_cpu = stx::models::gelu_sigmoid(x_cpu);
    y_cpu.backward(dy.to(at::kFloat));
    const at::Tensor x_cuda = x.to(at::kCUDA).detach().requires_grad_(true);
    const at::Tensor y_cuda = stx::models::gelu_sigmoid(x_cuda);
    y_cuda.backward(dy.to(at::kCUDA));
    ASSERT_TRUE(y_cuda.is_cuda());
    EXPECT_EQ(y_cuda.scalar_type(), d.dtype);
    EXPECT_EQ(x_cuda.grad().scalar_type(), d.dtype);
    const at::Tensor y = y_cuda.detach().cpu().to(at::kFloat), dx = x_cuda.grad().cpu().to(at::kFloat);
    EXPECT_TRUE(at::allclose(y, y_cpu.detach(), d.rtol, d.atol))
        << "forward: max |diff| " << max_error(y, y_cpu, 1.0);
    EXPECT_TRUE(at::allclose(dx, x_cpu.grad(), d.rtol, d.atol))
        << "backward: max |diff| " << max_error(dx, x_cpu.grad(), 1.0);
  }
}

// ---- a whole model -----------------------------------------------------------------------------------

constexpr int64_t kLength = 299;  // a multiple of neither block (32, 64) nor stride

// A preset shrunk to a few seconds of CPU work, keeping its data kind, pattern and block: 2 layers, d 128,
// 2 heads of 64, a context of 320, and l = 24 (a multiple of neither block).
ModelConfig shrunk(const std::string& preset, Precision precision = Precision::fp32, bool recompute = false,
                   double dropout = 0.0) {
  ModelConfig c = stx::models::preset(preset);
  c.context = 320;
  c.d_model = 128;
  c.layers = 2;
  c.heads = 2;
  c.d_ff = 256;
  c.stride = 24;
  c.precision = precision;
  c.recompute = recompute;
  c.dropout = dropout;
  c.validate();
  return c;
}

// A model with the weights of seed 5 (whatever its config), on `device`.
SparseTransformer model_on(const ModelConfig& config, at::Device device) {
  at::manual_seed(5);
  SparseTransformer model(config);
  model->to(device);
  return model;
}

at::Tensor random_bytes(int64_t batch, int64_t length, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(0, 256, {batch, length}, at::kLong);
}

at::Tensor logits_of(SparseTransformer& model, const at::Tensor& bytes) {
  model->eval();
  at::NoGradGuard no_grad;
  return model->forward(bytes);
}

// One training forward and backward of the mean cross entropy (seeded, for the dropout masks).
void backward_once(SparseTransformer& model, const at::Tensor& bytes) {
  model->train();
  model->zero_grad();
  at::manual_seed(99);
  at::cross_entropy_loss(model->forward(bytes).reshape({-1, 256}), bytes.reshape({-1})).backward();
}

// Every parameter's gradient against the same parameter's of `expected`, relative to the largest
// magnitude in that expected gradient; returns the worst error and prints it once.
double expect_same_gradients(SparseTransformer& actual, SparseTransformer& expected, double tolerance,
                             const std::string& what) {
  const auto a = actual->named_parameters(), e = expected->named_parameters();
  EXPECT_EQ(a.size(), e.size());
  double worst = 0.0;
  std::string worst_name;
  for (size_t i = 0; i < std::min(a.size(), e.size()); ++i) {
    const std::string& name = e[i].key();
    const at::Tensor ga = a[i].value().grad(), ge = e[i].value().grad();
    EXPECT_TRUE(ga.defined() && ge.defined()) << what << ": no gradient for " << name;
    if (!ga.defined() || !ge.defined()) continue;
    EXPECT_TRUE(all_finite(ga)) << what << ": " << name;
    const double error = max_error(ga, ge);
    EXPECT_LE(error, tolerance) << what << ": " << name;
    if (error >= worst) {
      worst = error;
      worst_name = name;
    }
  }
  std::printf("[ measured ] %s: worst %.2e in %s (tolerance %.0e)\n", what.c_str(), worst, worst_name.c_str(),
              tolerance);
  return worst;
}

class CudaSparseTransformer : public NeedsCuda<::testing::TestWithParam<std::string>> {};

// Both fp32 (LibTorch leaves TF32 off for fp32 matmuls by default; with it on this fails, as it should):
// cuBLAS and the CPU's BLAS add the 128- to 598-term products in other orders, and the attention kernels
// differ by under 1e-6 (above). An H100 measured 6e-7 for the logits and 1.2e-6 for the worst parameter's
// gradient; 2e-5 is the bound for both.
constexpr double kFp32ModelTolerance = 2e-5;

TEST_P(CudaSparseTransformer, LogitsMatchTheCpuInFp32) {
  const ModelConfig config = shrunk(GetParam());
  SparseTransformer cpu = model_on(config, at::kCPU), cuda = model_on(config, at::kCUDA);
  const at::Tensor bytes = random_bytes(2, kLength, 1);
  const at::Tensor want = logits_of(cpu, bytes), got = logits_of(cuda, bytes.to(at::kCUDA));
  ASSERT_TRUE(got.is_cuda());
  EXPECT_EQ(got.scalar_type(), at::kFloat);
  expect_close(got, want, kFp32ModelTolerance, GetParam() + " logits");
}

TEST_P(CudaSparseTransformer, GradientsMatchTheCpuInFp32) {
  const ModelConfig config = shrunk(GetParam());
  SparseTransformer cpu = model_on(config, at::kCPU), cuda = model_on(config, at::kCUDA);
  const at::Tensor bytes = random_bytes(2, kLength, 2);
  backward_once(cpu, bytes);
  backward_once(cuda, bytes.to(at::kCUDA));
  expect_same_gradients(cuda, cpu, kFp32ModelTolerance, GetParam() + " gradients, CUDA against CPU");
}

TEST_P(CudaSparseTransformer, MixedPrecisionLogitsAreFiniteAndCloseToFp32) {
  const at::Tensor bytes = random_bytes(2, kLength, 3).to(at::kCUDA);
  SparseTransformer exact = model_on(shrunk(GetParam()), at::kCUDA);
  const at::Tensor want = logits_of(exact, bytes);
  backward_once(exact, bytes);
  // Autocast runs the matmuls, attention and GELU in the 16-bit type, each rounding its result by up to
  // 2^-8 (bf16) or 2^-11 (fp16) of a value; a few such roundings in a row reach the logits. The bounds are
  // about 10x one rounding. Gradients, per parameter as in the CPU's bf16 test: within 5% (L2) of fp32's.
  const struct {
    Precision precision;
    double logit_tolerance;
  } precisions[] = {{Precision::bf16, 4e-2}, {Precision::fp16, 5e-3}};
  for (const auto& p : precisions) {
    const std::string what = GetParam() + " " + stx::models::to_string(p.precision);
    SparseTransformer mixed = model_on(shrunk(GetParam(), p.precision), at::kCUDA);
    const at::Tensor got = logits_of(mixed, bytes);
    EXPECT_EQ(got.scalar_type(), at::kFloat) << what << ": logits are fp32 whatever the activations";
    const double error = expect_close(got, want, p.logit_tolerance, what + " logits against fp32");
    EXPECT_GT(error, 0.0) << what << ": the logits equal fp32's bit for bit, so autocast did not run";

    backward_once(mixed, bytes);
    const auto pm = mixed->named_parameters(), pe = exact->named_parameters();
    double worst = 0.0;
    for (size_t i = 0; i < pm.size(); ++i) {
      const at::Tensor g = pm[i].value().grad(), ge = pe[i].value().grad();
      ASSERT_TRUE(g.defined()) << what << ": " << pm[i].key();
      EXPECT_EQ(g.scalar_type(), at::kFloat) << what << ": fp32 weights get fp32 gradients";
      EXPECT_TRUE(all_finite(g)) << what << ": " << pm[i].key();
      const double off = (g - ge).norm().item<double>(), norm = ge.norm().item<double>();
      EXPECT_LE(off, 0.05 * norm + 1e-6)
          << what << ": the gradient of " << pm[i].key() << " strays from fp32's";
      worst = std::max(worst, off / std::max(norm, 1e-30));
    }
    std::printf("[ measured ] %s gradients against fp32: worst L2 %.2e (tolerance 5e-02)\n", what.c_str(),
                worst);
  }
}

TEST_P(CudaSparseTransformer, RecomputationGivesTheSameGradients) {
  const at::Tensor bytes = random_bytes(2, kLength, 4).to(at::kCUDA);
  // The same kernels on the same inputs, run again in backward; only the order in which autograd adds a
  // block's contributions may differ (fp32 rounding, ~1e-7). bf16 checks that the recomputed branch runs
  // under the forward's autocast: run in fp32 instead it would differ by bf16's 4e-3.
  for (const auto& [precision, tolerance] :
       {std::pair{Precision::fp32, 1e-5}, std::pair{Precision::bf16, 1e-3}}) {
    const std::string what = GetParam() + " " + stx::models::to_string(precision) + " recomputed";
    SparseTransformer plain = model_on(shrunk(GetParam(), precision), at::kCUDA);
    SparseTransformer recomputed = model_on(shrunk(GetParam(), precision, true), at::kCUDA);
    backward_once(plain, bytes);
    backward_once(recomputed, bytes);
    expect_same_gradients(recomputed, plain, tolerance, what);
  }
}

TEST_P(CudaSparseTransformer, RecomputationReplaysTheDropoutMasks) {
  // With dropout, the recomputed branch must draw the forward's masks again (on CUDA, from the CUDA
  // generator); other masks give other gradients, off by far more than rounding.
  const at::Tensor bytes = random_bytes(2, kLength, 5).to(at::kCUDA);
  SparseTransformer plain = model_on(shrunk(GetParam(), Precision::fp32, false, 0.1), at::kCUDA);
  SparseTransformer recomputed = model_on(shrunk(GetParam(), Precision::fp32, true, 0.1), at::kCUDA);
  backward_once(plain, bytes);
  backward_once(recomputed, bytes);
  expect_same_gradients(recomputed, plain, 1e-5, GetParam() + " fp32 dropout 0.1 recomputed");
}

INSTANTIATE_TEST_SUITE_P(Presets, CudaSparseTransformer, ::testing::Values("text-small", "audio-small"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---- moving between devices ----------------------------------------------------------------------------

class CudaModelDevices : public NeedsCuda<::testing::Test> {};

TEST_F(CudaModelDevices, CpuToCudaToCpuLeavesEveryWeightBitIdentical) {
  SparseTransformer model = model_on(shrunk("text-small"), at::kCPU);
  std::vector<std::pair<std::string, at::Tensor>> before;
  for (const auto& p : model->named_parameters()) before.emplace_back(p.key(), p.value().detach().clone());
  for (const auto& b : model->named_buffers()) before.emplace_back(b.key(), b.value().clone());
  const at::Tensor bytes = random_bytes(1, 100, 6);
  const at::Tensor logits_before = logits_of(model, bytes);

  model->to(at::kCUDA);
  for (const auto& p : model->named_parameters()) EXPECT_TRUE(p.value().is_cuda()) << p.key();
  for (const auto& b : model->named_buffers()) EXPECT_TRUE(b.value().is_cuda()) << b.key();
  EXPECT_TRUE(all_finite(logits_of(model, bytes.to(at::kCUDA))));
  // A checkpoint written from CUDA holds these values: the copy back must not round them.
  model->to(at::kCPU);

  std::vector<std::pair<std::string, at::Tensor>> after;
  for (const auto& p : model->named_parameters()) after.emplace_back(p.key(), p.value().detach());
  for (const auto& b : model->named_buffers()) after.emplace_back(b.key(), b.value());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].first, before[i].first);
    EXPECT_TRUE(after[i].second.is_cpu()) << after[i].first;
    EXPECT_TRUE(at::equal(after[i].second, before[i].second))
        << after[i].first << " changed on the round trip";
  }
  EXPECT_TRUE(at::equal(logits_of(model, bytes), logits_before)) << "the same weights, the same CPU logits";
}

}  // namespace
