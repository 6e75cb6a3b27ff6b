// The fused activation against a double-precision reference, on every CPU instruction set, on sizes
// that are not multiples of any vector width or work chunk, and on extreme inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "stx/kernels/activation.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;

double reference_sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double reference_gelu(double x) { return x * reference_sigmoid(1.702 * x); }
double reference_gelu_grad(double x) {
  const double s = reference_sigmoid(1.702 * x);
  return s + 1.702 * x * s * (1.0 - s);
}

std::vector<float> inputs(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = normal(rng);
  // Extremes among the first elements: where sigmoid saturates, signed zeros, and overflow territory.
  const float extremes[] = {0.0f, -0.0f, 100.0f, -100.0f, 1e30f, -1e30f, 60.0f, -60.0f, 1e-30f, -1e-30f};
  for (size_t i = 0; i < std::size(extremes) && i < x.size(); ++i) x[i] = extremes[i];
  return x;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " element " << i << " is " << got[i];
    ASSERT_NEAR(got[i], want[i], 2e-6 + 2e-6 * std::fabs(want[i])) << what << " element " << i;
  }
}

class Gelu : public ::testing::TestWithParam<int64_t> {};

TEST_P(Gelu, ForwardAndBackwardMatchReferenceOnEveryInstructionSet) {
  const int64_t count = GetParam();
  const std::vector<float> x = inputs(count, 7);
  const std::vector<float> dy = inputs(count, 8);
  std::vector<double> want_y(x.size()), want_dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    want_y[i] = reference_gelu(x[i]);
    want_dx[i] = static_cast<double>(dy[i]) * reference_gelu_grad(x[i]);
  }
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    std::vector<float> y(x.size(), NAN), dx(x.size(), NAN);
    GeluParams p;
    p.x = x.data();
    p.out = y.data();
    p.count = count;
    gelu_forward(p);
    expect_close(y, want_y, "forward");
    p.grad_out = dy.data();
    p.out = dx.data();
    gelu_backward(p);
    expect_close(dx, want_dx, "backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, Gelu, ::testing::Values(1, 3, 15, 17, 1000, 16385, 100003));

TEST(GeluChecks, BadCallsThrowWithTheReason) {
  std::vector<float> x(4, 1.0f), y(4);
  GeluParams p;
  p.x = x.data();
  p.out = y.data();
  p.count = -1;
  EXPECT_THROW(gelu_forward(p), Error);
  p.count = 4;
  p.dtype = DType::bf16;
  EXPECT_THROW(gelu_forward(p), Error);  // the CPU takes float32 only
  p.dtype = DType::f32;
  EXPECT_THROW(gelu_backward(p), Error);  // no grad_out
  p.out = nullptr;
  EXPECT_THROW(gelu_forward(p), Error);
  p.count = 0;
  EXPECT_NO_THROW(gelu_forward(p));  // nothing to do, nothing touched
}

}  // namespace
