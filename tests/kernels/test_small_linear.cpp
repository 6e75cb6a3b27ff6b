// small_linear against a double-precision reference on every CPU instruction set: row counts around the
// register tile, column counts around whole tiles (tails), padded row strides, with and without bias.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "stx/kernels/small_linear.h"
#include "test_util.h"

namespace {

using namespace stx::kernels;

struct Shape {
  int64_t rows, in, out;
};

// x [rows, x_stride] times weights [in, out] plus bias, into y [rows, y_stride].
SmallLinearParams product(const Shape& s, const float* x, int64_t x_stride, const void* weights, const float* bias,
                          float* y, int64_t y_stride) {
  SmallLinearParams p;
  p.x = x;
  p.weight_t = weights;
  p.bias = bias;
  p.y = y;
  p.rows = s.rows;
  p.in = s.in;
  p.out = s.out;
  p.x_stride = x_stride;
  p.y_stride = y_stride;
  return p;
}

TEST(SmallLinear, MatchesReferenceOnEveryInstructionSet) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const Shape shapes[] = {{1, 1, 1},   {1, 192, 576}, {2, 17, 63},  {3, 64, 64},   {4, 192, 768},
                          {5, 768, 192}, {7, 33, 200}, {9, 256, 257}, {16, 100, 1000},
                          {16, 192, 256},  // the output layer of 16 samples: whole tiles, then single vectors
                          {13, 40, 77}};   // single vectors and a scalar tail, with a partial row tile
  for (const Shape& s : shapes) {
    for (bool with_bias : {true, false}) {
      const int64_t x_stride = s.in + 3, y_stride = s.out + 5;  // padded rows: strides are honoured
      std::vector<float> x(static_cast<size_t>(s.rows * x_stride)), w(static_cast<size_t>(s.in * s.out)),
          bias(static_cast<size_t>(s.out));
      for (float& v : x) v = normal(rng);
      for (float& v : w) v = normal(rng);
      for (float& v : bias) v = normal(rng);
      std::vector<double> want(static_cast<size_t>(s.rows * s.out));
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.out; ++c) {
          double acc = with_bias ? bias[c] : 0.0;
          for (int64_t i = 0; i < s.in; ++i) acc += static_cast<double>(x[r * x_stride + i]) * w[i * s.out + c];
          want[r * s.out + c] = acc;
        }
      for (CpuIsa isa : stx::test::supported_cpu_isas()) {
        SCOPED_TRACE(std::string(to_string(isa)) + " rows " + std::to_string(s.rows) + " in " +
                     std::to_string(s.in) + " out " + std::to_string(s.out) + (with_bias ? " bias" : ""));
        stx::test::ForcedCpuIsa forced(isa);
        std::vector<float> y(static_cast<size_t>(s.rows * y_stride), NAN);
        small_linear(product(s, x.data(), x_stride, w.data(), with_bias ? bias.data() : nullptr, y.data(), y_stride));
        for (int64_t r = 0; r < s.rows; ++r) {
          for (int64_t c = 0; c < s.out; ++c) {
            const double expected = want[r * s.out + c];
            ASSERT_NEAR(y[r * y_stride + c], expected, 1e-4 * (1.0 + std::sqrt(static_cast<double>(s.in))))
                << "row " << r << " column " << c;
          }
          for (int64_t c = s.out; c < y_stride; ++c) ASSERT_TRUE(std::isnan(y[r * y_stride + c])) << "padding written";
        }
      }
    }
  }
}

// Half weights (a model exported in fp16) are widened exactly and go through the same arithmetic, so they
// must give the very bits of their widened floats, on every path, tails and partial row tiles included.
TEST(SmallLinear, HalfWeightsGiveTheBitsOfTheirWidenedFloats) {
  std::mt19937 rng(6);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const Shape shapes[] = {{1, 1, 1}, {1, 192, 576}, {2, 17, 63}, {5, 768, 192}, {9, 256, 257}, {13, 40, 77},
                          {16, 192, 256}};
  for (const Shape& s : shapes) {
    const int64_t x_stride = s.in + 1, y_stride = s.out + 2;
    std::vector<float> x(static_cast<size_t>(s.rows * x_stride)), w(static_cast<size_t>(s.in * s.out)),
        bias(static_cast<size_t>(s.out));
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    std::vector<uint16_t> half(w.size());
    convert_to_half(w.data(), half.data(), static_cast<int64_t>(w.size()));
    std::vector<float> widened(w.size());
    convert_from_half(half.data(), widened.data(), static_cast<int64_t>(w.size()));
    for (CpuIsa isa : stx::test::supported_cpu_isas()) {
      SCOPED_TRACE(std::string(to_string(isa)) + " rows " + std::to_string(s.rows) + " in " +
                   std::to_string(s.in) + " out " + std::to_string(s.out));
      stx::test::ForcedCpuIsa forced(isa);
      std::vector<float> from_floats(static_cast<size_t>(s.rows * y_stride), 0.0f), from_halves = from_floats;
      SmallLinearParams p =
          product(s, x.data(), x_stride, widened.data(), bias.data(), from_floats.data(), y_stride);
      small_linear(p);
      p.weight_t = half.data();
      p.weight_dtype = DType::f16;
      p.y = from_halves.data();
      small_linear(p);
      for (size_t i = 0; i < from_floats.size(); ++i) {
        ASSERT_EQ(std::memcmp(&from_floats[i], &from_halves[i], sizeof(float)), 0)
            << "element " << i << ": " << from_floats[i] << " from floats, " << from_halves[i] << " from halves";
      }
      // And the halves were really used: the unrounded weights give other bits somewhere.
      p.weight_t = w.data();
      p.weight_dtype = DType::f32;
      std::vector<float> unrounded(from_floats.size(), 0.0f);
      p.y = unrounded.data();
      small_linear(p);
      if (s.in * s.out > 1) {
        EXPECT_NE(unrounded, from_halves);
      }
    }
  }
}

TEST(SmallLinear, BadCallsThrow) {
  std::vector<float> x(4), w(4), y(4);
  SmallLinearParams p;
  p.x = x.data();
  p.weight_t = w.data();
  p.y = y.data();
  p.rows = 1;
  p.in = 2;
  p.out = 0;
  EXPECT_THROW(small_linear(p), Error);
  p.out = 2;
  p.x_stride = 1;  // shorter than a row
  EXPECT_THROW(small_linear(p), Error);
  p.x_stride = 0;
  p.weight_dtype = DType::bf16;  // not a weight type this kernel reads
  EXPECT_THROW(small_linear(p), Error);
  p.weight_dtype = DType::f32;
  p.y = nullptr;
  EXPECT_THROW(small_linear(p), Error);
}

}  // namespace
