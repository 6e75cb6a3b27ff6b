// The tonal peak ratio and note events: noise of any envelope has neither, a held chord is tonal but starts
// no notes, a melody is tonal and starts its notes; silence and short input give nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "stx/engine/mulaw.h"
#include "stx/engine/measures/spectral_flatness.h"
#include "stx/engine/measures/tonal_peaks.h"

namespace stx::engine {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kRate = 12000;
constexpr size_t kEight = 8 * kRate;

std::vector<float> normalised(std::vector<float> x, double peak) {
  double m = 1e-12;
  for (float v : x) m = std::max(m, static_cast<double>(std::fabs(v)));
  for (float& v : x) v = static_cast<float>(v * peak / m);
  return x;
}

// White noise, its running sum (brown), and a one-pole low-pass of it: smooth envelopes, steep and gentle.
std::vector<std::vector<float>> noises() {
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> white(kEight), brown(kEight), low(kEight);
  double sum = 0, lp = 0;
  for (size_t i = 0; i < kEight; ++i) {
    const float w = g(rng);
    white[i] = w;
    sum = 0.999 * sum + w;
    brown[i] = static_cast<float>(sum);
    lp = 0.9 * lp + 0.1 * w;
    low[i] = static_cast<float>(lp);
  }
  return {normalised(white, 0.3), normalised(brown, 0.3), normalised(low, 0.3)};
}

std::vector<float> held_chord() {
  std::vector<float> x(kEight);
  for (size_t i = 0; i < kEight; ++i) {
    const double t = static_cast<double>(i) / kRate;
    x[i] = static_cast<float>(0.1 * (std::sin(2 * kPi * 261.6 * t) + std::sin(2 * kPi * 329.6 * t) +
                                     std::sin(2 * kPi * 392.0 * t)));
  }
  return x;
}

// Two notes a second, each five decaying harmonics, stepping around a scale.
std::vector<float> melody() {
  const double scale[] = {261.6, 293.7, 329.6, 349.2, 392.0, 440.0, 493.9, 523.3};
  std::vector<float> x(kEight, 0.0f);
  for (int note = 0; note < 16; ++note) {
    const double f0 = scale[(note * 3) % 8];
    for (size_t i = static_cast<size_t>(note) * kRate / 2; i < kEight; ++i) {
      const double t = static_cast<double>(i - static_cast<size_t>(note) * kRate / 2) / kRate;
      double v = 0;
      for (int h = 1; h <= 5; ++h) v += std::sin(2 * kPi * f0 * h * t) / h;
      x[i] += static_cast<float>(0.15 * v * std::exp(-3 * t));
    }
  }
  return x;
}

double median_ratio(const TonalPeaks& t) { return median(t.frame_ratios); }
double events_per_second(const TonalPeaks& t) { return static_cast<double>(t.note_events) / t.seconds; }

TEST(TonalPeaks, NoiseOfAnyEnvelopeHasNoPeaksAndStartsNoNotes) {
  for (const std::vector<float>& noise : noises()) {
    const TonalPeaks t = tonal_peaks(noise.data(), noise.size());
    ASSERT_EQ(t.frame_ratios.size(), 45u);  // 8 s: frames at 0, 2048, ..., 90112
    EXPECT_LT(median_ratio(t), 0.3);
    EXPECT_LT(events_per_second(t), 0.2);
  }
}

TEST(TonalPeaks, AHeldChordIsTonalButStartsNoNotes) {
  const std::vector<float> chord = held_chord();
  const TonalPeaks t = tonal_peaks(chord.data(), chord.size());
  EXPECT_GT(median_ratio(t), 0.8);
  EXPECT_LT(events_per_second(t), 0.3);
}

TEST(TonalPeaks, AChordWithTremoloOrVibratoStartsNoNotes) {
  std::vector<float> x = held_chord();
  std::vector<float> y = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / kRate;
    x[i] = static_cast<float>(x[i] * (1.0 + 0.6 * std::sin(2 * kPi * 4 * t)));  // 60% tremolo
    // 1% vibrato at 5 Hz on each partial
    y[i] = static_cast<float>(0.1 * (std::sin(2 * kPi * 261.6 * t + 0.52 * std::sin(2 * kPi * 5 * t)) +
                                     std::sin(2 * kPi * 329.6 * t + 0.66 * std::sin(2 * kPi * 5 * t)) +
                                     std::sin(2 * kPi * 392.0 * t + 0.78 * std::sin(2 * kPi * 5 * t))));
  }
  for (const std::vector<float>* s : {&x, &y}) {
    const TonalPeaks t = tonal_peaks(s->data(), s->size());
    EXPECT_GT(median_ratio(t), 0.8);
    EXPECT_LT(events_per_second(t), 0.3);
  }
}

TEST(TonalPeaks, AMelodyIsTonalAndStartsItsNotes) {
  const std::vector<float> tune = melody();
  const TonalPeaks t = tonal_peaks(tune.data(), tune.size());
  EXPECT_GT(median_ratio(t), 0.8);
  EXPECT_GT(events_per_second(t), 1.0);  // 2 notes a second; the first 0.34 s has nothing to compare with
  EXPECT_LT(events_per_second(t), 3.0);
  // Through mu-law as the models write it: the same as its decoded samples.
  std::vector<uint8_t> bytes(tune.size());
  std::vector<float> decoded(tune.size());
  for (size_t i = 0; i < tune.size(); ++i) {
    bytes[i] = mulaw_encode(tune[i]);
    decoded[i] = mulaw_decode(bytes[i]);
  }
  const TonalPeaks from_bytes = tonal_peaks_mulaw(bytes.data(), bytes.size());
  const TonalPeaks from_decoded = tonal_peaks(decoded.data(), decoded.size());
  EXPECT_EQ(from_bytes.frame_ratios, from_decoded.frame_ratios);
  EXPECT_EQ(from_bytes.note_events, from_decoded.note_events);
}

TEST(TonalPeaks, SilenceAndShortInputGiveNothingAndBadOptionsAreRefused) {
  const std::vector<float> silence(kEight, 0.0f);
  const TonalPeaks quiet = tonal_peaks(silence.data(), silence.size());
  EXPECT_TRUE(quiet.frame_ratios.empty());
  EXPECT_EQ(quiet.note_events, 0);
  EXPECT_DOUBLE_EQ(quiet.seconds, 8.0);
  const std::vector<float> tune = melody();
  EXPECT_TRUE(tonal_peaks(tune.data(), 4095).frame_ratios.empty());
  TonalPeakOptions bad;
  bad.frame = 1000;
  EXPECT_THROW(tonal_peaks(tune.data(), tune.size(), bad), std::invalid_argument);
  bad = TonalPeakOptions{};
  bad.hop = 0;
  EXPECT_THROW(tonal_peaks(tune.data(), tune.size(), bad), std::invalid_argument);
}

}  // namespace
}  // namespace stx::engine
