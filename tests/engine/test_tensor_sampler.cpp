// pick_bytes (the batched sampler a device-resident decode step runs) against pick_byte (the host sampler
// every generation uses today): given the same logits, settings and uniform, the same byte, for every setting
// and for logits with ties, on CPU tensors (the same operations run on a CUDA device).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/sampler.h"
#include "stx/engine/tensor_sampler.h"

namespace {

using stx::engine::SamplingSettings;

// Rows of logits of several kinds: spread, peaked, and with ties (values from a handful of levels).
std::vector<float> random_logits(int rows, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> logits(static_cast<size_t>(rows) * 256);
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < 256; ++b) {
      float& x = logits[static_cast<size_t>(r) * 256 + b];
      switch (r % 3) {
        case 0: x = 2.0f * normal(rng); break;
        case 1: x = (b == r % 256 ? 8.0f : 0.0f) + 0.5f * normal(rng); break;
        default: x = static_cast<float>(level(rng)); break;  // many equal logits
      }
    }
  }
  return logits;
}

TEST(PickBytes, EveryRowPicksWhatPickBytePicksForEverySetting) {
  std::mt19937 rng(11);
  constexpr int kRows = 96;
  const std::vector<float> logits = random_logits(kRows, rng);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> u(kRows);
  for (double& x : u) x = uniform(rng);
  u[0] = 0.0;
  u[1] = 0.999999999;
  const at::Tensor logits_tensor = at::from_blob(const_cast<float*>(logits.data()), {kRows, 256}, at::kFloat);
  const at::Tensor u_tensor = at::from_blob(u.data(), {kRows}, at::kDouble);
  int checked = 0;
  for (double temperature : {0.0, 0.7, 1.0, 1.6}) {
    for (int top_k : {0, 1, 5, 40}) {
      for (double top_p : {1.0, 0.9, 0.4}) {
        for (double min_p : {0.0, 0.05}) {
          SamplingSettings s;
          s.temperature = temperature;
          s.top_k = top_k;
          s.top_p = top_p;
          s.min_p = min_p;
          const at::Tensor picked = stx::engine::pick_bytes(logits_tensor, s, u_tensor);
          ASSERT_EQ(picked.scalar_type(), at::kLong);
          ASSERT_EQ(picked.size(0), kRows);
          for (int r = 0; r < kRows; ++r) {
            const int want = stx::engine::pick_byte(logits.data() + static_cast<size_t>(r) * 256, s, u[r]);
            ASSERT_EQ(picked[r].item<int64_t>(), want)
                << "row " << r << " u " << u[r] << " temperature " << temperature << " top_k " << top_k
                << " top_p " << top_p << " min_p " << min_p;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 3 * 2 * kRows);
}

TEST(PickBytes, AnEvenSweepOfUniformsDrawsTheTemperedDistribution) {
  // One row repeated: the frequencies over u = (i + 0.5) / n follow softmax(logits / T) of the kept bytes.
  std::vector<float> row(256, -10.0f);
  row[7] = 2.0f;
  row[9] = 1.0f;
  constexpr int n = 4000;
  const at::Tensor logits = at::from_blob(row.data(), {1, 256}, at::kFloat).expand({n, 256}).contiguous();
  const at::Tensor u = (at::arange(n, at::kDouble) + 0.5) / n;
  SamplingSettings s;
  s.top_k = 2;
  const at::Tensor picked = stx::engine::pick_bytes(logits, s, u);
  const double share7 = (picked == 7).sum().item<int64_t>() / static_cast<double>(n);
  EXPECT_NEAR(share7, std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-3);
  EXPECT_EQ((picked == 7).logical_or(picked == 9).all().item<bool>(), true);
}

TEST(PickBytes, ShapesThatDoNotFitAreRefused) {
  SamplingSettings s;
  EXPECT_THROW(stx::engine::pick_bytes(at::zeros({2, 255}), s, at::zeros({2})), stx::engine::Error);
  EXPECT_THROW(stx::engine::pick_bytes(at::zeros({2, 256}), s, at::zeros({3})), stx::engine::Error);
}

}  // namespace
