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

// W [in, out] (row-major) in the kernel's panels.
template <class T>
std::vector<T> packed(const std::vector<T>& w, const Shape& s) {
  std::vector<T> out(static_cast<size_t>(packed_weight_elements(s.in, s.out)));
  pack_weight_panels(w.data(), s.in, s.out, out.data());
  return out;
}

// x [rows, x_stride] times packed weights plus bias, into y [rows, y_stride].
SmallLinearParams product(const Shape& s, const float* x, int64_t x_stride, const void* weights, const float* bias,
                          float* y, int64_t y_stride) {
  SmallLinearParams p;
  p.x = x;
  p.weights = weights;
  p.bias = bias;
  p.y = y;
  p.rows = s.rows;
  p.in = s.in;
  p.out = s.out;
  p.x_stride = x_stride;
  p.y_stride = y_stride;
  return p;
}

// Random x ([rows, x_stride]), weights ([in, out]) and bias, and the weights rounded to halves.
struct Operands {
  std::vector<float> x, w, bias;
  std::vector<uint16_t> half;
};
Operands random_operands(const Shape& s, int64_t x_stride, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operands o;
  o.x.resize(static_cast<size_t>(s.rows * x_stride));
  o.w.resize(static_cast<size_t>(s.in * s.out));
  o.bias.resize(static_cast<size_t>(s.out));
  for (std::vector<float>* values : {&o.x, &o.w, &o.bias}) {
    for (float& v : *values) v = normal(rng);
  }
  o.half.resize(o.w.size());
  convert_to_half(o.w.data(), o.half.data(), static_cast<int64_t>(o.w.size()));
  return o;
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
      const std::vector<float> panels = packed(w, s);
      for (CpuIsa isa : stx::test::supported_cpu_isas()) {
        SCOPED_TRACE(std::string(to_string(isa)) + " rows " + std::to_string(s.rows) + " in " +
                     std::to_string(s.in) + " out " + std::to_string(s.out) + (with_bias ? " bias" : ""));
        stx::test::ForcedCpuIsa forced(isa);
        std::vector<float> y(static_cast<size_t>(s.rows * y_stride), NAN);
        small_linear(product(s, x.data(), x_stride, panels.data(), with_bias ? bias.data() : nullptr,
                             y.data(), y_stride));
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
  const Shape shapes[] = {{1, 1, 1}, {1, 192, 576}, {2, 17, 63}, {5, 768, 192}, {9, 256, 257}, {13, 40, 77},
                          {16, 192, 256}};
  for (const Shape& s : shapes) {
    const int64_t x_stride = s.in + 1, y_stride = s.out + 2;
    const auto [x, w, bias, half] = random_operands(s, x_stride, rng);
    std::vector<float> widened(w.size());
    convert_from_half(half.data(), widened.data(), static_cast<int64_t>(w.size()));
    const std::vector<float> widened_panels = packed(widened, s), float_panels = packed(w, s);
    const std::vector<uint16_t> half_panels = packed(half, s);
    for (CpuIsa isa : stx::test::supported_cpu_isas()) {
      SCOPED_TRACE(std::string(to_string(isa)) + " rows " + std::to_string(s.rows) + " in " +
                   std::to_string(s.in) + " out " + std::to_string(s.out));
      stx::test::ForcedCpuIsa forced(isa);
      std::vector<float> from_floats(static_cast<size_t>(s.rows * y_stride), 0.0f), from_halves = from_floats;
      SmallLinearParams p =
          product(s, x.data(), x_stride, widened_panels.data(), bias.data(), from_floats.data(), y_stride);
      small_linear(p);
      p.weights = half_panels.data();
      p.weight_dtype = DType::f16;
      p.y = from_halves.data();
      small_linear(p);
      for (size_t i = 0; i < from_floats.size(); ++i) {
        ASSERT_EQ(std::memcmp(&from_floats[i], &from_halves[i], sizeof(float)), 0)
            << "element " << i << ": " << from_floats[i] << " from floats, " << from_halves[i] << " from halves";
      }
      // And the halves were really used: the unrounded weights give other bits somewhere.
      p.weights = float_panels.data();
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

// Threads that share one product each compute their part of the columns. The parts must cover every
// column exactly once and give the bits of one whole call: the decoder's one-region step relies on both,
// and on the residual sums following small_linear_columns.
TEST(SmallLinear, PartsOfTheColumnsGiveTheBitsOfOneCall) {
  std::mt19937 rng(7);
  const Shape shapes[] = {{1, 1, 1},     {1, 192, 192}, {1, 192, 576}, {1, 768, 192}, {1, 192, 256},
                          {3, 40, 77},   {2, 17, 15},   {5, 48, 80},   {15, 64, 1000}};
  for (const Shape& s : shapes) {
    const auto [x, w, bias, half] = random_operands(s, s.in, rng);
    const std::vector<float> float_panels = packed(w, s);
    const std::vector<uint16_t> half_panels = packed(half, s);
    for (CpuIsa isa : stx::test::supported_cpu_isas()) {
      stx::test::ForcedCpuIsa forced(isa);
      for (const bool halves : {false, true}) {
        std::vector<float> whole(static_cast<size_t>(s.rows * s.out), 0.0f);
        SmallLinearParams p = product(
            s, x.data(), s.in, halves ? static_cast<const void*>(half_panels.data()) : float_panels.data(),
            bias.data(), whole.data(), s.out);
        p.weight_dtype = halves ? DType::f16 : DType::f32;
        small_linear(p);
        for (const int parts : {2, 3, 5}) {
          SCOPED_TRACE(std::string(to_string(isa)) + (halves ? " half" : " float") + " rows " +
                       std::to_string(s.rows) + " in " + std::to_string(s.in) + " out " + std::to_string(s.out) +
                       ", " + std::to_string(parts) + " parts");
          std::vector<float> shared(whole.size(), NAN);
          int64_t next = 0;
          for (int part = 0; part < parts; ++part) {
            const auto [first, last] = small_linear_columns(s.out, part, parts);
            ASSERT_EQ(first, next) << "part " << part << " does not start where the last one ended";
            ASSERT_LE(first, last);
            next = last;
            std::vector<float> before = shared;
            p.y = shared.data();
            p.part = part;
            p.parts = parts;
            small_linear(p);
            for (int64_t r = 0; r < s.rows; ++r) {
              for (int64_t c = 0; c < s.out; ++c) {
                const size_t at = static_cast<size_t>(r * s.out + c);
                if (c >= first && c < last) continue;
                ASSERT_EQ(std::memcmp(&before[at], &shared[at], sizeof(float)), 0)
                    << "part " << part << " wrote column " << c << " outside its columns";
              }
            }
          }
          EXPECT_EQ(next, s.out) << "the parts leave columns out";
          for (size_t i = 0; i < whole.size(); ++i) {
            ASSERT_EQ(std::memcmp(&whole[i], &shared[i], sizeof(float)), 0)
                << "element " << i << ": " << whole[i] << " whole, " << shared[i] << " in parts";
          }
        }
      }
    }
  }
  // Two threads share the audio models' 192 columns evenly, on every path.
  for (CpuIsa isa : stx::test::supported_cpu_isas()) {
    stx::test::ForcedCpuIsa forced(isa);
    EXPECT_EQ(small_linear_columns(192, 0, 2), std::make_pair(int64_t{0}, int64_t{96})) << to_string(isa);
    EXPECT_EQ(small_linear_columns(192, 1, 2), std::make_pair(int64_t{96}, int64_t{192})) << to_string(isa);
  }
}

// The panels hold W[i][c] at (c / 16) * 16 * in + i * 16 + c % 16, and zeros past the last column, so a
// register tile may read whole vectors of a panel that is only partly used.
TEST(SmallLinear, PanelsHoldEveryWeightWhereTheKernelReadsIt) {
  for (const Shape s :
       {Shape{1, 1, 1}, Shape{1, 3, 16}, Shape{1, 5, 17}, Shape{1, 192, 576}, Shape{1, 7, 33}}) {
    std::vector<float> w(static_cast<size_t>(s.in * s.out));
    for (size_t k = 0; k < w.size(); ++k) w[k] = static_cast<float>(k + 1);
    const std::vector<float> panels = packed(w, s);
    ASSERT_EQ(static_cast<int64_t>(panels.size()), (s.out + 15) / 16 * 16 * s.in);
    for (int64_t i = 0; i < s.in; ++i) {
      for (int64_t c = 0; c < (s.out + 15) / 16 * 16; ++c) {
        const float got = panels[static_cast<size_t>((c / 16) * 16 * s.in + i * 16 + c % 16)];
        EXPECT_EQ(got, c < s.out ? w[static_cast<size_t>(i * s.out + c)] : 0.0f)
            << "row " << i << " column " << c;
      }
    }
  }
  std::vector<uint16_t> one{0x3c00}, dst(16);
  EXPECT_THROW(pack_weight_panels(one.data(), 0, 1, dst.data()), Error);
  EXPECT_THROW(pack_weight_panels(static_cast<const uint16_t*>(nullptr), 1, 1, dst.data()), Error);
}

TEST(SmallLinear, BadCallsThrow) {
  std::vector<float> x(4), w(32), y(4);  // w: the 2 x 2 weights packed take 2 x 16
  SmallLinearParams p;
  p.x = x.data();
  p.weights = w.data();
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
  p.parts = 2;
  p.part = 2;  // parts count from 0
  EXPECT_THROW(small_linear(p), Error);
  p.part = -1;
  EXPECT_THROW(small_linear(p), Error);
  p.part = 0;
  p.parts = 0;
  EXPECT_THROW(small_linear(p), Error);
  p.parts = 1;
  EXPECT_THROW(small_linear_columns(0, 0, 1), Error);
  EXPECT_THROW(small_linear_columns(8, 1, 1), Error);
  p.y = nullptr;
  EXPECT_THROW(small_linear(p), Error);
}

}  // namespace
