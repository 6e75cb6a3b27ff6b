// The linear-prediction expert: its fits against a plain least-squares solve on awkward sizes, its
// distribution against the Laplace density integrated over each mu-law bin, and what a user of the audio
// model relies on (a tone is predicted, a runaway level is caught, a crop's past gives the same state).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "stx/models/linear_predictor.h"
#include "stx/models/mulaw.h"

namespace stx::models {
namespace {

constexpr double kPi = 3.14159265358979323846;

// An expert of `order` refitted every `refit_interval` bytes over the last `window`, the other fields defaulted.
LinearExpertConfig expert_config(int64_t order, int64_t refit_interval, int64_t window) {
  LinearExpertConfig c;
  c.order = order;
  c.refit_interval = refit_interval;
  c.window = window;
  return c;
}

// A damped two-partial signal with a little noise, as mu-law bytes: something a low order predicts well.
std::vector<uint8_t> tone_bytes(size_t count, double noise, uint32_t seed, double amplitude = 0.3) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, noise);
  std::vector<uint8_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    const double t = static_cast<double>(i) / 12000.0;
    const double x = amplitude * (std::sin(2 * kPi * 440 * t) + 0.5 * std::sin(2 * kPi * 1320 * t + 0.3)) *
                         (0.6 + 0.4 * std::cos(2 * kPi * 0.7 * t)) +
                     (noise > 0 ? normal(rng) : 0.0);
    out[i] = mulaw_encode(x);
  }
  return out;
}

// The ridge least-squares fit written out plainly: for t in the window (zero before the first byte),
// minimise sum (x[t] - sum_k a_k x[t-1-k])^2 + lambda |a|^2 with lambda = ridge * trace + 1e-12, by
// Gaussian elimination with partial pivoting.
std::vector<double> naive_fit(const std::vector<uint8_t>& bytes, size_t count, const LinearExpertConfig& c) {
  const auto& amp = mulaw_amplitude_table();
  auto x = [&](int64_t t) { return t < 0 ? 0.0 : static_cast<double>(amp[bytes[static_cast<size_t>(t)]]); };
  const int64_t p = c.order, t1 = static_cast<int64_t>(count), t0 = std::max<int64_t>(0, t1 - c.window);
  std::vector<std::vector<double>> m(static_cast<size_t>(p), std::vector<double>(static_cast<size_t>(p + 1), 0.0));
  double trace = 0;
  for (int64_t j = 0; j < p; ++j) {
    for (int64_t k = 0; k < p; ++k) {
      double sum = 0;
      for (int64_t t = t0; t < t1; ++t) sum += x(t - 1 - j) * x(t - 1 - k);
      m[j][k] = sum;
    }
    double rhs = 0;
    for (int64_t t = t0; t < t1; ++t) rhs += x(t) * x(t - 1 - j);
    m[j][p] = rhs;
    trace += m[j][j];
  }
  const double lambda = c.ridge * trace + 1e-12;
  for (int64_t j = 0; j < p; ++j) m[j][j] += lambda;
  for (int64_t col = 0; col < p; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < p; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
    std::swap(m[col], m[pivot]);
    for (int64_t r = 0; r < p; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int64_t k = col; k <= p; ++k) m[r][k] -= f * m[col][k];
    }
  }
  std::vector<double> a(static_cast<size_t>(p));
  for (int64_t j = 0; j < p; ++j) a[j] = m[j][p] / m[j][j];
  return a;
}

TEST(LinearPredictor, EveryFitIsTheLeastSquaresSolutionOnAwkwardSizes) {
  struct Case {
    int64_t order, refit, window;
    double ridge;
  };
  for (const Case& k : {Case{7, 33, 100, 1e-4}, Case{13, 50, 257, 1e-3}, Case{1, 16, 17, 0.0}, Case{32, 64, 1000, 1e-4}}) {
    LinearExpertConfig c;
    c.order = k.order;
    c.refit_interval = k.refit;
    c.window = k.window;
    c.ridge = k.ridge;
    c.scale_window = std::min<int64_t>(8, k.refit);
    const std::vector<uint8_t> bytes = tone_bytes(2400, 0.01, 3);
    LinearPredictor predictor(c);
    int fits = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      predictor.push(bytes[i]);
      const auto n = static_cast<int64_t>(i + 1);
      if (n % c.refit_interval != 0 || n < 2 * c.order) continue;
      ASSERT_FALSE(predictor.last_fit_was_guarded());
      const std::vector<double> want = naive_fit(bytes, i + 1, c);
      const std::vector<double>& got = predictor.coefficients();
      ASSERT_EQ(got.size(), want.size());
      double scale = 1e-9;
      for (double v : want) scale = std::max(scale, std::fabs(v));
      for (size_t j = 0; j < want.size(); ++j) {
        ASSERT_NEAR(got[j], want[j], 1e-6 * scale) << "order " << c.order << " after " << n << " bytes, tap " << j;
      }
      ++fits;
    }
    EXPECT_GT(fits, 5) << "order " << c.order;
  }
}

TEST(LinearPredictor, ThePredictionIsTheFitAppliedToTheLastSamples) {
  LinearExpertConfig c = expert_config(5, 20, 60);
  const std::vector<uint8_t> bytes = tone_bytes(333, 0.005, 4);
  LinearPredictor predictor(c);
  const auto& amp = mulaw_amplitude_table();
  for (size_t i = 0; i < bytes.size(); ++i) {
    predictor.push(bytes[i]);
    double want = 0;
    const auto& a = predictor.coefficients();
    for (size_t k = 0; k < a.size() && k <= i; ++k) want += a[k] * amp[bytes[i - k]];
    want = std::clamp(want, -1.0, 1.0);
    ASSERT_NEAR(predictor.mean(), want, 1e-12);
    ASSERT_EQ(predictor.predicted_byte(), mulaw_encode(want));
  }
}

// p(byte) by the midpoint rule over the bin, the tails cut at +-1 and beyond reached analytically.
double integrated_laplace(double mu, double s, int byte) {
  const auto& e = mulaw_bin_edges();
  auto cdf = [&](double x) { return x < mu ? 0.5 * std::exp((x - mu) / s) : 1.0 - 0.5 * std::exp(-(x - mu) / s); };
  const double lo = std::max(e[static_cast<size_t>(byte)], -1.5), hi = std::min(e[static_cast<size_t>(byte) + 1], 1.5);
  const int steps = 20000;
  double sum = 0;
  for (int i = 0; i < steps; ++i) {
    const double x = lo + (hi - lo) * (i + 0.5) / steps;
    sum += std::exp(-std::fabs(x - mu) / s) / (2 * s) * (hi - lo) / steps;
  }
  if (byte == 0) sum += cdf(-1.5);
  if (byte == 255) sum += 1.0 - cdf(1.5);
  return sum;
}

TEST(LinearPredictor, TheDistributionIsTheLaplaceMassOfEachBinWithTheFloor) {
  LinearExpertConfig c = expert_config(3, 8, 40);
  c.scale_window = 8;
  LinearPredictor predictor(c);
  const std::vector<uint8_t> bytes = tone_bytes(400, 0.02, 5);
  std::vector<float> lp(256);
  for (size_t i = 0; i < bytes.size(); ++i) {
    predictor.push(bytes[i]);
    if (i % 57 != 3) continue;
    predictor.log_probs(lp.data());
    double total = 0;
    for (int b = 0; b < 256; ++b) total += std::exp(static_cast<double>(lp[b]));
    ASSERT_NEAR(total, 1.0, 1e-5);
    const double f = LinearPredictor::kProbabilityFloor;
    for (int b : {0, 17, 100, 127, 128, 129, predictor.predicted_byte(), 200, 255}) {
      const double want =
          (1 - 256 * f) * integrated_laplace(predictor.mean(), predictor.distribution_scale(), b) + f;
      ASSERT_NEAR(std::exp(static_cast<double>(lp[b])), want, 2e-4 * want + 1e-9) << "byte " << b << " at " << i;
    }
    // The most likely byte is the predicted one or its neighbour (a bin's mass, not its centre, decides).
    const int best = static_cast<int>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    EXPECT_LE(std::abs(best - predictor.predicted_byte()), 1);
  }
}

// A held level predicted perfectly would put all the mass on one byte; the scale floor keeps at most about 64%
// there (a Laplace of half a bin's width centred in the bin), so that a sample drawn from it can move on.
TEST(LinearPredictor, NoByteTakesAllTheMassEvenOnAPerfectlyPredictedLevel) {
  LinearExpertConfig c = expert_config(8, 16, 256);
  LinearPredictor predictor(c);
  std::vector<float> lp(256);
  for (int i = 0; i < 2000; ++i) predictor.push(170);
  EXPECT_LT(predictor.scale(), predictor.distribution_scale());  // the network's input still says "certain"
  const auto& edges = stx::models::mulaw_bin_edges();
  const auto b = static_cast<size_t>(predictor.predicted_byte());
  EXPECT_DOUBLE_EQ(predictor.distribution_scale(), LinearPredictor::kScaleFloorBins * (edges[b + 1] - edges[b]));
  predictor.log_probs(lp.data());
  const double most = std::exp(static_cast<double>(*std::max_element(lp.begin(), lp.end())));
  EXPECT_LE(most, 1.0 - std::exp(-1.0) + 1e-6);
  EXPECT_GT(most, 0.4);
}

TEST(LinearPredictor, TheScaleIsTheMeanAbsoluteErrorOfTheLastPredictions) {
  LinearExpertConfig c = expert_config(4, 16, 64);
  c.scale_window = 10;
  LinearPredictor predictor(c);
  EXPECT_EQ(predictor.scale(), LinearPredictor::kInitialScale);
  const std::vector<uint8_t> bytes = tone_bytes(200, 0.01, 6);
  std::vector<double> errors;
  const auto& amp = mulaw_amplitude_table();
  for (uint8_t b : bytes) {
    errors.push_back(std::fabs(amp[b] - predictor.mean()));
    predictor.push(b);
    const size_t n = std::min<size_t>(errors.size(), 10);
    double sum = 0;
    for (size_t k = errors.size() - n; k < errors.size(); ++k) sum += errors[k];
    ASSERT_NEAR(predictor.scale(), std::max(LinearPredictor::kMinScale, sum / n), 1e-9);
  }
}

TEST(LinearPredictor, APastReadAsHistoryLeavesTheStateOfReadingItByteByByte) {
  LinearExpertConfig c = expert_config(9, 31, 150);
  c.scale_window = 12;
  const std::vector<uint8_t> bytes = tone_bytes(1500, 0.01, 7);
  for (size_t past : {size_t{0}, size_t{5}, size_t{31}, size_t{62}, size_t{400}, size_t{1033}}) {
    LinearPredictor one_by_one(c), as_history(c);
    for (size_t i = 0; i < past; ++i) one_by_one.push(bytes[i]);
    as_history.push_history(bytes.data(), static_cast<int64_t>(past));
    std::vector<float> a(256), b(256);
    for (size_t i = past; i < bytes.size(); ++i) {
      ASSERT_EQ(one_by_one.mean(), as_history.mean()) << "past " << past << " at " << i;
      ASSERT_EQ(one_by_one.scale(), as_history.scale());
      one_by_one.log_probs(a.data());
      as_history.log_probs(b.data());
      ASSERT_EQ(a, b);
      one_by_one.push(bytes[i]);
      as_history.push(bytes[i]);
    }
  }
}

TEST(LinearPredictor, ATonePredictedFromItsPastCostsFewBits) {
  LinearExpertConfig c = expert_config(32, 256, 4096);
  const std::vector<uint8_t> bytes = tone_bytes(24000, 0.0, 8);
  LinearPredictor predictor(c);
  std::vector<float> lp(256);
  double bits = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    predictor.log_probs(lp.data());
    if (i >= 4096) bits -= lp[bytes[i]] / std::log(2.0);
    predictor.push(bytes[i]);
  }
  // mu-law rounding alone leaves the byte uncertain by about one bin: a byte costs a bit or two, where a
  // predictor that knew nothing would pay 8.
  EXPECT_LT(bits / static_cast<double>(bytes.size() - 4096), 2.5);
}

TEST(LinearPredictor, ALevelThatRunsAwayIsFittedWithTheGuard) {
  LinearExpertConfig c = expert_config(16, 64, 1024);
  LinearPredictor predictor(c);
  // A quiet tone, then the same tone growing 40% every 64 samples, as an unstable loop's output would.
  const std::vector<uint8_t> quiet = tone_bytes(2048, 0.001, 9, 0.02);
  for (uint8_t b : quiet) {
    predictor.push(b);
    ASSERT_FALSE(predictor.last_fit_was_guarded());
  }
  const auto& amp = mulaw_amplitude_table();
  bool guarded = false;
  for (int i = 0; i < 1024; ++i) {
    const double growth = std::pow(1.4, i / 64.0);
    predictor.push(mulaw_encode(amp[quiet[static_cast<size_t>(i)]] * growth));
    guarded = guarded || predictor.last_fit_was_guarded();
  }
  EXPECT_TRUE(guarded);
  // Silence and a full-scale square wave are fitted without a failure (no NaN, a finite scale).
  LinearPredictor silent(c), square(c);
  for (int i = 0; i < 3000; ++i) {
    silent.push(128);
    square.push((i / 20) % 2 == 0 ? 255 : 0);
  }
  EXPECT_TRUE(std::isfinite(silent.mean()) && std::isfinite(silent.scale()));
  EXPECT_TRUE(std::isfinite(square.mean()) && std::isfinite(square.scale()));
  EXPECT_TRUE(square.last_fit_was_guarded());  // full scale counts as running away
}

TEST(MuLaw, TheBinEdgesAreWhereTheEncoderChangesItsByte) {
  const auto& edges = mulaw_bin_edges();
  const auto& amp = mulaw_amplitude_table();
  for (int k = 1; k < 256; ++k) {
    const double e = edges[static_cast<size_t>(k)];
    EXPECT_EQ(mulaw_encode(e + 1e-9), k) << k;
    EXPECT_EQ(mulaw_encode(e - 1e-9), k - 1) << k;
    EXPECT_LT(edges[static_cast<size_t>(k)], amp[static_cast<size_t>(k)]);
    EXPECT_GT(edges[static_cast<size_t>(k)], amp[static_cast<size_t>(k) - 1]);
  }
  for (int b = 0; b < 256; ++b) EXPECT_EQ(mulaw_encode(amp[static_cast<size_t>(b)]), b);
}

}  // namespace
}  // namespace stx::models
