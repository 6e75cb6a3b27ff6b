// fused_linear (stx/kernels/fused_linear.h) on the CPU against a naive reference in double precision: a layer
// norm, the product with a torch-layout weight, the bias, GELU and the residual, on awkward sizes (rows across
// the CUDA kernel's chunk of 8, inputs and outputs that are multiples of nothing), each option on and off.
// stx_cuda_tests holds the CUDA kernel to this CPU loop.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "stx/kernels/activation.h"
#include "stx/kernels/error.h"
#include "stx/kernels/fused_linear.h"

namespace {

using namespace stx::kernels;

struct Case {
  int64_t rows, in, out;
  bool norm, bias, gelu, residual;
};

std::vector<float> random_values(size_t count, std::mt19937& rng, float spread, float offset = 0.0f) {
  std::normal_distribution<float> normal(offset, spread);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(FusedLinear, EqualsTheNaiveReference) {
  std::vector<Case> cases;
  for (const int64_t rows : {1, 3, 9, 16})
    for (const int64_t in : {48, 193, 1000})
      for (const int64_t out : {5, 33, 256})
        for (int options = 0; options < 16; options += (rows + in + out) % 3 + 1)
          cases.push_back({rows, in, out, (options & 1) != 0, (options & 2) != 0, (options & 4) != 0,
                           (options & 8) != 0});
  ASSERT_GT(cases.size(), 150u);
  std::mt19937 rng(3);
  for (const Case& c : cases) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + " in " + std::to_string(c.in) + " out " +
                 std::to_string(c.out) + (c.norm ? " norm" : "") + (c.bias ? " bias" : "") +
                 (c.gelu ? " gelu" : "") + (c.residual ? " residual" : ""));
    const int64_t x_stride = c.in + 3, y_stride = c.out + 2;  // rows with gaps between them
    const std::vector<float> x = random_values(static_cast<size_t>(c.rows * x_stride), rng, 2.0f, 0.7f);
    const std::vector<float> gamma = random_values(static_cast<size_t>(c.in), rng, 0.5f, 1.0f);
    const std::vector<float> beta = random_values(static_cast<size_t>(c.in), rng, 0.3f);
    const std::vector<float> w = random_values(static_cast<size_t>(c.out * c.in), rng, 0.1f);
    const std::vector<float> bias = random_values(static_cast<size_t>(c.out), rng, 0.5f);
    const std::vector<float> residual = random_values(static_cast<size_t>(c.rows * y_stride), rng, 1.0f);
    std::vector<float> y(static_cast<size_t>(c.rows * y_stride), -99.0f);
    FusedLinearParams p;
    p.x = x.data();
    p.x_stride = x_stride;
    p.gamma = c.norm ? gamma.data() : nullptr;
    p.beta = c.norm ? beta.data() : nullptr;
    p.weight = w.data();
    p.bias = c.bias ? bias.data() : nullptr;
    p.residual = c.residual ? residual.data() : nullptr;
    p.y = y.data();
    p.y_stride = y_stride;
    p.rows = c.rows;
    p.in = c.in;
    p.out = c.out;
    p.activation = c.gelu ? Activation::gelu : Activation::none;
    fused_linear(p);
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<double> n(static_cast<size_t>(c.in));
      double mean = 0.0, var = 0.0;
      for (int64_t i = 0; i < c.in; ++i) mean += x[r * x_stride + i];
      mean /= static_cast<double>(c.in);
      for (int64_t i = 0; i < c.in; ++i) var += (x[r * x_stride + i] - mean) * (x[r * x_stride + i] - mean);
      var /= static_cast<double>(c.in);
      for (int64_t i = 0; i < c.in; ++i) {
        const double v = x[r * x_stride + i];
        n[i] = c.norm ? (v - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i] : v;
      }
      for (int64_t o = 0; o < c.out; ++o) {
        double v = c.bias ? bias[o] : 0.0;
        for (int64_t i = 0; i < c.in; ++i) v += n[i] * w[o * c.in + i];
        if (c.gelu) v = v / (1.0 + std::exp(-static_cast<double>(kGeluSigmoidSlope) * v));
        if (c.residual) v += residual[r * y_stride + o];
        ASSERT_NEAR(y[r * y_stride + o], v, 2e-5 * (1.0 + std::fabs(v))) << "row " << r << " column " << o;
      }
      for (int64_t o = c.out; o < y_stride; ++o) ASSERT_EQ(y[r * y_stride + o], -99.0f) << "gap written";
    }
  }
}

TEST(FusedLinear, RefusesWhatItCannotDo) {
  std::vector<float> x(2048), w(2048), y(2048), gamma(1025);
  FusedLinearParams p;
  p.x = x.data();
  p.weight = w.data();
  p.y = y.data();
  p.rows = 1;
  p.in = 1025;  // past the widest input
  p.out = 1;
  EXPECT_THROW(fused_linear(p), Error);
  p.in = 8;
  p.gamma = gamma.data();  // without beta
  EXPECT_THROW(fused_linear(p), Error);
  p.gamma = nullptr;
  p.x_stride = 4;  // shorter than a row
  EXPECT_THROW(fused_linear(p), Error);
  p.x_stride = 0;
  p.rows = 0;  // nothing to do, nothing written
  EXPECT_NO_THROW(fused_linear(p));
}

}  // namespace
