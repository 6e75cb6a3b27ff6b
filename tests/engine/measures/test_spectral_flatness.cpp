// Spectral flatness: tones are near 0, noise is far from it, silence is left out, and the FFT is right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "stx/engine/mulaw.h"
#include "stx/engine/measures/spectral_flatness.h"

namespace stx::engine {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kRate = 12000;

std::vector<float> chord(size_t count, std::vector<double> hz, double amplitude) {
  std::vector<float> x(count, 0.0f);
  for (size_t i = 0; i < count; ++i)
    for (double f : hz) x[i] += static_cast<float>(amplitude * std::sin(2.0 * kPi * f * i / kRate));
  return x;
}

std::vector<float> white_noise(size_t count, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(sigma));
  std::vector<float> x(count);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(SpectralFlatness, ATonesFlatnessIsNearZeroAndNoisesIsNot) {
  const std::vector<float> tone = chord(kRate, {440.0, 660.0, 880.0}, 0.2);
  const std::vector<float> noise = white_noise(kRate, 0.2, 1);
  const std::vector<double> tonal = frame_flatness(tone.data(), tone.size());
  const std::vector<double> noisy = frame_flatness(noise.data(), noise.size());
  // 12,000 samples: whole frames start at 0, 512, ..., 10,752
  ASSERT_EQ(tonal.size(), 22u);
  ASSERT_EQ(noisy.size(), 22u);
  EXPECT_LT(median(tonal), 1e-3);
  // a periodogram of white noise has exponentially distributed bins: geometric / arithmetic mean e^-0.577
  EXPECT_NEAR(median(noisy), 0.56, 0.06);
  for (double f : noisy) {
    EXPECT_GT(f, 0.3);
    EXPECT_LE(f, 1.0);
  }
}

TEST(SpectralFlatness, MuLawBytesGiveWhatTheirDecodedSamplesGive) {
  const std::vector<float> tone = chord(4096, {300.0}, 0.5);
  std::vector<uint8_t> bytes(tone.size());
  std::vector<float> decoded(tone.size());
  for (size_t i = 0; i < tone.size(); ++i) {
    bytes[i] = mulaw_encode(tone[i]);
    decoded[i] = mulaw_decode(bytes[i]);
  }
  EXPECT_EQ(frame_flatness_mulaw(bytes.data(), bytes.size()), frame_flatness(decoded.data(), decoded.size()));
  // mu-law's rounding adds a noise floor, but a tone stays a tone
  EXPECT_LT(median(frame_flatness_mulaw(bytes.data(), bytes.size())), 0.02);
}

TEST(SpectralFlatness, SilentFramesAreLeftOut) {
  // half a second of silence (mu-law's 128 decodes to 8.6e-5), then a tone
  std::vector<float> x(kRate / 2, mulaw_decode(128));
  const std::vector<float> tone = chord(kRate / 2, {500.0}, 0.3);
  x.insert(x.end(), tone.begin(), tone.end());
  const std::vector<double> frames = frame_flatness(x.data(), x.size());
  // of the 22 frames, those lying wholly in the 6,000 silent samples (starts 0..4,608) are left out
  EXPECT_EQ(frames.size(), 12u);
  for (double f : frames) EXPECT_LT(f, 0.05);
  const std::vector<float> silence(kRate, 0.0f);
  EXPECT_TRUE(frame_flatness(silence.data(), silence.size()).empty());
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(SpectralFlatness, ShortInputsHaveNoFramesAndBadOptionsAreRefused) {
  const std::vector<float> tone = chord(1023, {500.0}, 0.3);
  EXPECT_TRUE(frame_flatness(tone.data(), tone.size()).empty());
  FlatnessOptions odd;
  odd.frame = 1000;
  EXPECT_THROW(frame_flatness(tone.data(), tone.size(), odd), std::invalid_argument);
  FlatnessOptions no_hop;
  no_hop.hop = 0;
  EXPECT_THROW(frame_flatness(tone.data(), tone.size(), no_hop), std::invalid_argument);
}

TEST(SpectralFlatness, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
}

}  // namespace
}  // namespace stx::engine
