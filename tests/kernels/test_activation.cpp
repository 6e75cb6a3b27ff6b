// The fused activation against a double-precision reference, on every CPU instruction set, on sizes
// that are not multiples of any vector width or work chunk, and on extreme inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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

// The activation forward into y and backward into dx, over `count` elements of `dtype`.
void forward_and_backward(DType dtype, const void* x, const void* dy, void* y, void* dx, int64_t count) {
  GeluParams p;
  p.dtype = dtype;
  p.x = x;
  p.out = y;
  p.count = count;
  gelu_forward(p);
  p.grad_out = dy;
  p.out = dx;
  gelu_backward(p);
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
    forward_and_backward(DType::f32, x.data(), dy.data(), y.data(), dx.data(), count);
    expect_close(y, want_y, "forward");
    expect_close(dx, want_dx, "backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, Gelu, ::testing::Values(1, 3, 15, 17, 1000, 16385, 100003));

// bfloat16 as the top half of a float, rounded to nearest even: what LibTorch's cast does.
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return 0x7fc0;
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Each bf16 result is the float result rounded to nearest even; NaN stays NaN.
void expect_rounded(const std::vector<uint16_t>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(from_bf16(got[i]))) << what << " element " << i;
    } else {
      ASSERT_EQ(got[i], to_bf16(want[i])) << what << " element " << i << " of " << got.size();
    }
  }
}

class GeluBf16 : public ::testing::TestWithParam<int64_t> {};

// Under CPU autocast the activation takes and gives bfloat16. Its result must be the float32 kernel's
// on the widened input, rounded to nearest even, bit for bit: training in bf16 gives the same numbers
// as widening, activating and rounding in three passes did.
TEST_P(GeluBf16, EqualsTheFloatKernelRoundedToNearestEven) {
  const int64_t count = GetParam();
  std::vector<uint16_t> x(static_cast<size_t>(count)), dy(x.size());
  std::vector<float> xf(x.size()), dyf(x.size());
  const std::vector<float> raw_x = inputs(count, 9), raw_dy = inputs(count, 10);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = to_bf16(raw_x[i]);
    dy[i] = to_bf16(raw_dy[i]);
    xf[i] = from_bf16(x[i]);
    dyf[i] = from_bf16(dy[i]);
  }
  if (count > 10) {  // a NaN must stay NaN
    x[10] = 0x7fc0;
    xf[10] = NAN;
  }
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    SCOPED_TRACE(to_string(isa));
    stx::test::ForcedCpuIsa forced(isa);
    std::vector<float> yf(x.size()), dxf(x.size());
    forward_and_backward(DType::f32, xf.data(), dyf.data(), yf.data(), dxf.data(), count);
    std::vector<uint16_t> y(x.size(), 0xdead), dx(x.size(), 0xdead);
    forward_and_backward(DType::bf16, x.data(), dy.data(), y.data(), dx.data(), count);
    expect_rounded(y, yf, "forward");
    expect_rounded(dx, dxf, "backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, GeluBf16, ::testing::Values(1, 15, 17, 1000, 16385, 100003));

TEST(GeluChecks, BadCallsThrowWithTheReason) {
  std::vector<float> x(4, 1.0f), y(4);
  GeluParams p;
  p.x = x.data();
  p.out = y.data();
  p.count = -1;
  EXPECT_THROW(gelu_forward(p), Error);
  p.count = 4;
  p.dtype = DType::f16;
  EXPECT_THROW(gelu_forward(p), Error);  // the CPU takes float32 and bfloat16 only
  p.dtype = DType::f32;
  EXPECT_THROW(gelu_backward(p), Error);  // no grad_out
  p.out = nullptr;
  EXPECT_THROW(gelu_forward(p), Error);
  p.count = 0;
  EXPECT_NO_THROW(gelu_forward(p));  // nothing to do, nothing touched
}

}  // namespace
