// Audio fixtures written with libsndfile, read back at 12 kHz mono.
#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "data_test_support.h"
#include "stx/engine/data/audio_io.h"

namespace stx::engine {
namespace {

using test::expect_error;
constexpr double kPi = 3.14159265358979323846;

// Writes frames (interleaved, [frames, channels]) with libsndfile in the given major|subtype format.
void write_sound(const std::filesystem::path& file, int format, int sample_rate, int channels,
                 const std::vector<float>& interleaved) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* sound = sf_open(file.c_str(), SFM_WRITE, &info);
  ASSERT_NE(sound, nullptr) << sf_strerror(nullptr);
  const sf_count_t frames = static_cast<sf_count_t>(interleaved.size()) / channels;
  EXPECT_EQ(sf_writef_float(sound, interleaved.data(), frames), frames);
  sf_close(sound);
}

// [frames, channels]: the same sine in every channel, at `amplitude`.
std::vector<float> sine(double frequency, int sample_rate, double seconds, int channels,
                        float amplitude = 0.5f) {
  const size_t frames = static_cast<size_t>(std::lround(seconds * sample_rate));
  std::vector<float> samples;
  for (size_t i = 0; i < frames; ++i) {
    const float value =
        amplitude * static_cast<float>(std::sin(2 * kPi * frequency * static_cast<double>(i) / sample_rate));
    samples.insert(samples.end(), static_cast<size_t>(channels), value);
  }
  return samples;
}

// Sign changes between successive samples, ignoring the near-silent start and end of the resampler.
int zero_crossings(const std::vector<float>& samples) {
  int crossings = 0;
  for (size_t i = 1; i < samples.size(); ++i) {
    if ((samples[i - 1] < 0) != (samples[i] < 0)) ++crossings;
  }
  return crossings;
}

// A canonical 44-byte PCM WAV header with the given fields and `data_bytes` of zeros after it.
std::vector<uint8_t> wav_with_header(uint16_t channels, uint32_t sample_rate, uint32_t data_bytes) {
  std::vector<uint8_t> bytes;
  const auto text = [&](const char* s) { bytes.insert(bytes.end(), s, s + 4); };
  const auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  };
  const auto u16 = [&](uint16_t v) {
    bytes.push_back(uint8_t(v));
    bytes.push_back(uint8_t(v >> 8));
  };
  text("RIFF");
  u32(36 + data_bytes);
  text("WAVE");
  text("fmt ");
  u32(16);
  u16(1);
  u16(channels);
  u32(sample_rate);
  u32(sample_rate * channels * 2);
  u16(uint16_t(channels * 2));
  u16(16);
  text("data");
  u32(data_bytes);
  bytes.resize(bytes.size() + data_bytes, 0);
  return bytes;
}

std::string libsndfile_reason(const std::filesystem::path& file) {
  SF_INFO info{};
  SNDFILE* sound = sf_open(file.c_str(), SFM_READ, &info);
  if (sound) {
    sf_close(sound);
    return "";
  }
  return sf_strerror(nullptr);
}

class AudioIo : public ::testing::Test {
 protected:
  test::TempFolder folder;
};

TEST_F(AudioIo, StereoWav44kBecomesMono12kWithItsFrequency) {
  write_sound(folder / "tone.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2, sine(440, 44100, 1.0, 2));
  const std::vector<float> samples = load_audio_12k(folder / "tone.wav");
  EXPECT_NEAR(static_cast<double>(samples.size()), 12000.0, 120.0);
  // 440 Hz for one second crosses zero 880 times.
  EXPECT_NEAR(zero_crossings(samples), 880, 9);
  float peak = 0;
  for (const float s : samples) peak = std::max(peak, std::fabs(s));
  EXPECT_NEAR(peak, 0.5f, 0.02f);
}

TEST_F(AudioIo, Flac48kMonoKeepsItsFrequency) {
  write_sound(folder / "tone.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 48000, 1, sine(1000, 48000, 0.5, 1));
  const std::vector<float> samples = load_audio_12k(folder / "tone.flac");
  EXPECT_NEAR(static_cast<double>(samples.size()), 6000.0, 60.0);
  EXPECT_NEAR(zero_crossings(samples), 1000, 10);
}

TEST_F(AudioIo, TwelveKilohertzPassesThroughUnchanged) {
  const std::vector<float> tone = sine(300, 12000, 0.25, 1);
  write_sound(folder / "tone.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 12000, 1, tone);
  EXPECT_EQ(load_audio_12k(folder / "tone.wav"), tone);
}

TEST_F(AudioIo, ChannelsAreAveraged) {
  // Left +0.5, right -0.3: the mix is 0.1 everywhere.
  std::vector<float> frames;
  for (int i = 0; i < 1200; ++i) frames.insert(frames.end(), {0.5f, -0.3f});
  write_sound(folder / "dc.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 12000, 2, frames);
  const std::vector<float> samples = load_audio_12k(folder / "dc.wav");
  ASSERT_EQ(samples.size(), 1200u);
  for (const float s : samples) ASSERT_NEAR(s, 0.1f, 1e-6f);
}

TEST_F(AudioIo, FloatSamplesOutOfRangeOrNaNAreTamed) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> frames(4800, 0.25f);
  frames[100] = nan;
  frames[200] = inf;
  frames[300] = -inf;
  frames[400] = 7.0f;
  write_sound(folder / "wild.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, frames);
  for (const float s : load_audio_12k(folder / "wild.wav")) {
    ASSERT_TRUE(std::isfinite(s));
    ASSERT_LE(std::fabs(s), 1.0f);
  }
}

TEST_F(AudioIo, MemoryAndFileGiveTheSameSamples) {
  write_sound(folder / "tone.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 2, sine(700, 22050, 0.3, 2));
  const std::vector<uint8_t> bytes = test::read_whole_file(folder / "tone.wav");
  EXPECT_EQ(audio_12k_from_memory(bytes.data(), bytes.size(), "tone.wav"),
            load_audio_12k(folder / "tone.wav"));
}

TEST_F(AudioIo, MulawBytesFollowTheSamples) {
  write_sound(folder / "quiet.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 12000, 1,
              std::vector<float>(600, 0.0f));
  const std::vector<uint8_t> bytes = load_audio_mulaw(folder / "quiet.wav");
  ASSERT_EQ(bytes.size(), 600u);
  for (const uint8_t b : bytes) ASSERT_EQ(b, 128);
}

TEST_F(AudioIo, GarbageAndEmptyFilesGiveLibsndfilesReason) {
  test::write_file(folder / "noise.wav", test::random_bytes(4000, 7));
  test::write_file(folder / "empty.wav", std::vector<uint8_t>{});
  for (const char* name : {"noise.wav", "empty.wav"}) {
    const std::string reason = libsndfile_reason(folder / name);
    ASSERT_FALSE(reason.empty()) << name << " unexpectedly opened";
    expect_error([&] { load_audio_12k(folder / name); }, {name, "libsndfile", reason});
    const std::vector<uint8_t> bytes = test::read_whole_file(folder / name);
    expect_error([&] { audio_12k_from_memory(bytes.data(), bytes.size(), name); }, {name, "libsndfile"});
  }
}

TEST_F(AudioIo, ImpossibleHeadersAreRefused) {
  // 0 channels: libsndfile or our check refuses it; either way the error names the file.
  test::write_file(folder / "none.wav", wav_with_header(0, 44100, 400));
  expect_error([&] { load_audio_12k(folder / "none.wav"); }, {"none.wav"});
  // A rate libsndfile accepts but no audio has.
  test::write_file(folder / "fast.wav", wav_with_header(1, 4'000'000, 400));
  expect_error([&] { load_audio_12k(folder / "fast.wav"); }, {"fast.wav", "4000000 Hz"});
  test::write_file(folder / "slow.wav", wav_with_header(1, 8, 400));
  expect_error([&] { load_audio_12k(folder / "slow.wav"); }, {"slow.wav", "8 Hz"});
  test::write_file(folder / "wide.wav", wav_with_header(100, 8000, 2000));
  expect_error([&] { load_audio_12k(folder / "wide.wav"); }, {"wide.wav", "100 channels"});
}

// A WAV whose data chunk claims more than the file holds: read as far as it goes, with one warning that
// names the file; an intact one gets none.
TEST_F(AudioIo, ATruncatedWavIsReadWithAWarning) {
  const std::filesystem::path file = folder / "cut.wav";
  std::vector<uint8_t> bytes = wav_with_header(1, 12000, 2400);  // 1,200 samples promised
  bytes.resize(bytes.size() - 1000);                             // 500 of them cut off
  test::write_file(file, bytes);
  AudioWarnings warnings;
  const std::vector<float> samples = load_audio_12k(file, {}, &warnings);
  EXPECT_NEAR(static_cast<double>(samples.size()), 700.0, 2.0);
  ASSERT_EQ(warnings.lines.size(), 1u);
  EXPECT_EQ(warnings.lines[0], file.string() + ": truncated: its data chunk claims 1000 bytes more than the file "
                                               "holds; read as far as it goes");
  AudioWarnings from_memory;
  audio_12k_from_memory(bytes.data(), bytes.size(), "clip", {}, &from_memory);
  ASSERT_EQ(from_memory.lines.size(), 1u);
  EXPECT_EQ(from_memory.lines[0].rfind("clip: truncated", 0), 0u);

  test::write_file(folder / "whole.wav", wav_with_header(1, 12000, 2400));
  AudioWarnings none;
  EXPECT_EQ(load_audio_12k(folder / "whole.wav", {}, &none).size(), 1200u);
  EXPECT_TRUE(none.lines.empty());
}

// An Ogg cut short has no length (libsndfile reports the largest count) and libsndfile reads nothing
// from it: refused as truncated, not as hundreds of years long.
TEST_F(AudioIo, AnOggCutShortIsRefusedAsTruncated) {
  const std::filesystem::path whole = folder / "whole.ogg";
  SF_INFO probe{};
  probe.samplerate = 12000;
  probe.channels = 1;
  probe.format = SF_FORMAT_OGG | SF_FORMAT_VORBIS;
  ASSERT_TRUE(sf_format_check(&probe)) << "Debian's libsndfile writes Ogg Vorbis";
  write_sound(whole, SF_FORMAT_OGG | SF_FORMAT_VORBIS, 12000, 1, sine(440, 12000, 2.0, 1));
  std::ifstream in(whole, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.resize(bytes.size() * 2 / 3);
  test::write_file(folder / "cut.ogg", bytes);
  expect_error([&] { load_audio_12k(folder / "cut.ogg"); },
               {(folder / "cut.ogg").string() + ": truncated or damaged: its length is unknown"});
}

TEST_F(AudioIo, LengthAndSizeLimitsAreEnforced) {
  write_sound(folder / "second.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, sine(100, 16000, 1.0, 1));
  AudioLimits limits;
  limits.max_seconds = 0.5;
  expect_error([&] { load_audio_12k(folder / "second.wav", limits); },
               {"second.wav", "1 s long, over the limit of 0.50 s"});
  limits = {};
  limits.max_file_bytes = 1000;
  expect_error([&] { load_audio_12k(folder / "second.wav", limits); },
               {"second.wav", "over the limit of 1000 bytes"});
  const std::vector<uint8_t> bytes = test::read_whole_file(folder / "second.wav");
  expect_error([&] { audio_12k_from_memory(bytes.data(), bytes.size(), "second.wav", limits); },
               {"second.wav", "1000 bytes"});
  expect_error([&] { load_audio_12k(folder / "missing.wav"); }, {"missing.wav", "no such file"});
}

}  // namespace
}  // namespace stx::engine
