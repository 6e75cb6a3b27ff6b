// Exports re-read the way a user's tools would: WAVs through libsndfile, PNG chunks from the file bytes.
#include <gtest/gtest.h>
#include <sndfile.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "../data/data_test_support.h"
#include "stx/engine/data/audio_io.h"
#include "stx/engine/export/export.h"
#include "stx/engine/data/image_io.h"
#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

using test::expect_error;
using test::read_whole_file;
using test::TempFolder;
namespace fs = std::filesystem;
constexpr double kPi = 3.14159265358979323846;

ExportInfo sample_info() {
  ExportInfo info;
  info.model_name = "audio-small";
  info.model_hash = "sha256:0123abcd";
  info.seed = 1234;
  info.temperature = 0.9;
  info.top_k = 40;
  info.top_p = 0.95;
  info.prompt = "clip intro.wav";
  info.created = "2024-05-01T12:34:56Z";
  return info;
}

// x[i] = amplitude sin(2 pi f i / rate)
std::vector<float> sine(double frequency, int rate, size_t count, double amplitude = 0.5) {
  std::vector<float> samples(count);
  for (size_t i = 0; i < count; ++i) {
    samples[i] =
        static_cast<float>(amplitude * std::sin(2 * kPi * frequency * static_cast<double>(i) / rate));
  }
  return samples;
}

std::vector<uint8_t> mulaw_of(const std::vector<float>& samples) {
  std::vector<uint8_t> bytes(samples.size());
  std::transform(samples.begin(), samples.end(), bytes.begin(), &mulaw_encode);
  return bytes;
}

struct WavFile {
  SF_INFO info{};
  std::vector<float> samples;
  std::string title, artist, software, comment, date;
};

WavFile read_wav(const fs::path& path) {
  WavFile wav;
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &wav.info);
  if (!file) throw std::runtime_error(path.string() + ": " + sf_strerror(nullptr));
  const auto text = [&](int type) {
    const char* value = sf_get_string(file, type);
    return std::string(value ? value : "");
  };
  wav.title = text(SF_STR_TITLE);
  wav.artist = text(SF_STR_ARTIST);
  wav.software = text(SF_STR_SOFTWARE);
  wav.comment = text(SF_STR_COMMENT);
  wav.date = text(SF_STR_DATE);
  wav.samples.resize(static_cast<size_t>(wav.info.frames * wav.info.channels));
  sf_readf_float(file, wav.samples.data(), wav.info.frames);
  sf_close(file);
  return wav;
}

double correlation(const std::vector<float>& a, const std::vector<float>& b) {
  const size_t n = std::min(a.size(), b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// The frequency with the most power (Goertzel), on a 5 Hz grid from 50 Hz up to the 6 kHz that a 12 kHz
// source can hold.
double dominant_frequency(const std::vector<float>& samples, int rate) {
  double best_frequency = 0, best_power = -1;
  for (double frequency = 50; frequency <= 6000; frequency += 5) {
    const double coefficient = 2 * std::cos(2 * kPi * frequency / rate);
    double s1 = 0, s2 = 0;
    for (float x : samples) {
      const double s0 = x + coefficient * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    const double power = s1 * s1 + s2 * s2 - coefficient * s1 * s2;
    if (power > best_power) best_power = power, best_frequency = frequency;
  }
  return best_frequency;
}

std::set<std::string> folder_entries(const fs::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.insert(entry.path().filename().string());
  return names;
}

std::string file_text(const fs::path& path) {
  const std::vector<uint8_t> bytes = read_whole_file(path);
  return std::string(bytes.begin(), bytes.end());
}

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Walks a PNG's chunks (length, type, data, CRC), checking the signature, every CRC, IHDR first and
// IEND last; returns the tEXt chunks as (keyword, text) in file order.
PngText png_text_chunks(const std::vector<uint8_t>& png) {
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_GE(png.size(), 8u);
  EXPECT_EQ(std::memcmp(png.data(), signature, 8), 0) << "not a PNG signature";
  PngText text;
  std::vector<std::string> types;
  size_t at = 8;
  while (at + 12 <= png.size()) {
    const uint32_t length = big_endian_u32(&png[at]);
    if (at + 12 + length > png.size()) {
      ADD_FAILURE() << "chunk at " << at << " runs past the end";
      break;
    }
    const std::string type(reinterpret_cast<const char*>(&png[at + 4]), 4);
    const uint8_t* data = &png[at + 8];
    const uint32_t stored_crc = big_endian_u32(data + length);
    EXPECT_EQ(stored_crc, crc32(0L, &png[at + 4], length + 4)) << "bad CRC in " << type;
    types.push_back(type);
    if (type == "tEXt") {
      const std::string body(reinterpret_cast<const char*>(data), length);
      const size_t separator = body.find('\0');
      EXPECT_NE(separator, std::string::npos) << "tEXt without a keyword separator";
      text.emplace_back(body.substr(0, separator), body.substr(separator + 1));
    }
    at += 12 + length;
  }
  EXPECT_EQ(at, png.size()) << "bytes after the last chunk";
  EXPECT_FALSE(types.empty());
  if (!types.empty()) {
    EXPECT_EQ(types.front(), "IHDR");
    EXPECT_EQ(types.back(), "IEND");
  }
  return text;
}

class WavRates : public ::testing::TestWithParam<int> {};

TEST_P(WavRates, WavHasTheRateOneChannel16BitPcmAndTheLength) {
  // given one second of a 440 Hz tone as mu-law bytes
  TempFolder folder;
  const int rate = GetParam();
  const std::vector<uint8_t> bytes = mulaw_of(sine(440, kSampleRate, 12000));

  // when
  write_wav(folder / "out.wav", bytes.data(), bytes.size(), rate, sample_info());

  // then
  const WavFile wav = read_wav(folder / "out.wav");
  EXPECT_EQ(wav.info.samplerate, rate);
  EXPECT_EQ(wav.info.channels, 1);
  EXPECT_EQ(wav.info.format, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  const double expected_frames = static_cast<double>(bytes.size()) * rate / kSampleRate;
  EXPECT_NEAR(static_cast<double>(wav.info.frames), expected_frames, 2.0);
  EXPECT_EQ(folder_entries(folder.path()), std::set<std::string>{"out.wav"}) << "a temporary was left behind";
}

TEST_P(WavRates, MetadataReadsBackFromTheInfoChunk) {
  TempFolder folder;
  const std::vector<uint8_t> bytes = mulaw_of(sine(440, kSampleRate, 600));
  ExportInfo info = sample_info();
  info.kv_cache = "float32";
  write_wav(folder / "out.wav", bytes.data(), bytes.size(), GetParam(), info);

  const WavFile wav = read_wav(folder / "out.wav");
  EXPECT_EQ(wav.title, "audio-small sample, seed 1234");
  EXPECT_EQ(wav.artist, "audio-small");
  EXPECT_EQ(wav.software.rfind("STX Studio", 0), 0u) << wav.software;
  EXPECT_EQ(wav.date, "2024-05-01T12:34:56Z");
  EXPECT_EQ(wav.comment,
            "Model: audio-small; Model hash: sha256:0123abcd; Seed: 1234; Temperature: 0.9; Top-k: 40; "
            "Top-p: 0.95; KV cache: float32; Prompt: clip intro.wav");
}

INSTANTIATE_TEST_SUITE_P(Export, WavRates, ::testing::Values(12000, 44100, 48000));

TEST(Export, WavAt12kKeepsTheWaveform) {
  TempFolder folder;
  const std::vector<float> tone = sine(440, kSampleRate, 12000);
  const std::vector<uint8_t> bytes = mulaw_of(tone);
  write_wav(folder / "tone.wav", bytes.data(), bytes.size(), 12000, sample_info());

  const WavFile wav = read_wav(folder / "tone.wav");
  ASSERT_EQ(wav.samples.size(), tone.size());
  EXPECT_GT(correlation(wav.samples, tone), 0.99);
}

TEST(Export, WavAt48kKeepsTheFrequencyAndTheWaveform) {
  TempFolder folder;
  const std::vector<uint8_t> bytes = mulaw_of(sine(440, kSampleRate, 12000));
  write_wav(folder / "tone.wav", bytes.data(), bytes.size(), 48000, sample_info());

  const WavFile wav = read_wav(folder / "tone.wav");
  EXPECT_EQ(dominant_frequency(wav.samples, 48000), 440.0);
  // libsamplerate compensates its filter delay, so the tone lines up with one made at 48 kHz.
  EXPECT_GT(correlation(wav.samples, sine(440, 48000, wav.samples.size())), 0.99);
}

TEST(Export, FullScaleAudioClipsInsteadOfWrapping) {
  // A full-scale square wave makes the resampler overshoot past +-1; wrapped samples would flip sign.
  std::vector<uint8_t> bytes(1200);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = (i / 30) % 2 ? 255 : 0;
  TempFolder folder;
  write_wav(folder / "square.wav", bytes.data(), bytes.size(), 44100, sample_info());

  // Away from the edges, each half period of the 200 Hz square keeps its sign: low first, then high.
  const WavFile wav = read_wav(folder / "square.wav");
  size_t flipped = 0;
  for (size_t i = 0; i < wav.samples.size(); ++i) {
    const double phase = std::fmod(static_cast<double>(i) * 200 / 44100, 1.0);
    if (std::abs(phase - 0.5) < 0.02 || phase < 0.02 || phase > 0.98) continue;  // an edge
    if ((wav.samples[i] < 0) != (phase < 0.5)) ++flipped;
  }
  EXPECT_EQ(flipped, 0u);
}

TEST(Export, EmptyAudioIsAValidEmptyWav) {
  TempFolder folder;
  write_wav(folder / "empty.wav", nullptr, 0, 48000, sample_info());
  const WavFile wav = read_wav(folder / "empty.wav");
  EXPECT_EQ(wav.info.frames, 0);
  EXPECT_EQ(wav.info.samplerate, 48000);
}

TEST(Export, EncodeWavGivesTheBytesWriteWavWrites) {
  TempFolder folder;
  const std::vector<uint8_t> bytes = mulaw_of(sine(300, kSampleRate, 3000));
  write_wav(folder / "a.wav", bytes.data(), bytes.size(), 44100, sample_info());
  const std::string encoded = encode_wav(bytes.data(), bytes.size(), 44100, sample_info());
  EXPECT_EQ(encoded, file_text(folder / "a.wav"));
  EXPECT_EQ(encoded.compare(0, 4, "RIFF"), 0);
}

TEST(Export, LongPromptsAreCutSoTheMetadataStillReadsBack) {
  // libsndfile drops every INFO string on reading when one is about 2 KB long: keep the comment below.
  ExportInfo info = sample_info();
  info.prompt = std::string(5000, 'x');
  TempFolder folder;
  const std::vector<uint8_t> bytes = mulaw_of(sine(440, kSampleRate, 100));
  write_wav(folder / "long.wav", bytes.data(), bytes.size(), 12000, info);

  const WavFile wav = read_wav(folder / "long.wav");
  EXPECT_EQ(wav.title, "audio-small sample, seed 1234");
  const std::string cut_prompt = "Prompt: " + std::string(kMaxPromptMetadataBytes, 'x') + "...";
  EXPECT_EQ(wav.comment.substr(wav.comment.size() - cut_prompt.size()), cut_prompt);
}

TEST(Export, PromptsAreCutBetweenUtf8Characters) {
  ExportInfo info;
  // "é" is two bytes: 999 ASCII bytes put one of them across the limit.
  info.prompt = std::string(kMaxPromptMetadataBytes - 1, 'a') + "\xC3\xA9" + "tail";
  const PngText text = export_png_text(info);
  const auto prompt =
      std::find_if(text.begin(), text.end(), [](const auto& kv) { return kv.first == "Prompt"; });
  ASSERT_NE(prompt, text.end());
  EXPECT_EQ(prompt->second, std::string(kMaxPromptMetadataBytes - 1, 'a') + "...");
}

TEST(Export, UnsupportedRatesAreRefusedNamingTheFile) {
  TempFolder folder;
  const std::vector<uint8_t> bytes(100, 128);
  for (int rate : {22050, 0, -48000, 96000}) {
    expect_error([&] { write_wav(folder / "out.wav", bytes.data(), bytes.size(), rate, sample_info()); },
                 {(folder / "out.wav").string(), std::to_string(rate) + " Hz is not supported", "44100"});
    expect_error([&] { encode_wav(bytes.data(), bytes.size(), rate, sample_info()); },
                 {"WAV export", "not supported"});
  }
  EXPECT_TRUE(folder_entries(folder.path()).empty()) << "nothing may be written";
}

TEST(Export, AnExistingFileIsKeptUnlessReplaceIsAsked) {
  TempFolder folder;
  const std::vector<uint8_t> bytes = mulaw_of(sine(440, kSampleRate, 500));
  const std::vector<uint8_t> pixels(4 * 3 * 3, 200);
  for (const std::string name : {"old.wav", "old.png", "old.txt"}) {
    // given a file the user made earlier
    const fs::path path = folder / name;
    test::write_file(path, std::string("precious"));

    // when an export targets it without asking to replace it
    const auto export_to = [&](Overwrite overwrite) {
      if (name == "old.wav") write_wav(path, bytes.data(), bytes.size(), 12000, sample_info(), overwrite);
      if (name == "old.png") write_png_export(path, pixels.data(), 4, 3, 3, sample_info(), overwrite);
      if (name == "old.txt") write_text(path, "new text", overwrite);
    };
    expect_error([&] { export_to(Overwrite::Refuse); }, {path.string(), "already exists and is kept"});
    if (name == "old.wav") {  // the default is Refuse
      expect_error([&] { write_wav(path, bytes.data(), bytes.size(), 12000, sample_info()); },
                   {path.string()});
    }

    // then it is untouched, and only Replace replaces it
    EXPECT_EQ(file_text(path), "precious");
    export_to(Overwrite::Replace);
    EXPECT_NE(file_text(path), "precious");
  }
  EXPECT_EQ(folder_entries(folder.path()), (std::set<std::string>{"old.wav", "old.png", "old.txt"}));
  EXPECT_EQ(file_text(folder / "old.txt"), "new text");
  EXPECT_EQ(read_wav(folder / "old.wav").info.frames, 500);
}

TEST(Export, AMissingFolderOrAFolderTargetIsNamed) {
  TempFolder folder;
  const std::vector<uint8_t> bytes(10, 128);
  const fs::path missing = folder / "no-such-folder" / "out.wav";
  expect_error([&] { write_wav(missing, bytes.data(), bytes.size(), 12000, sample_info()); },
               {missing.string(), "does not exist"});
  expect_error([&] { write_text(folder / "no-such-folder" / "out.txt", "x"); },
               {"no-such-folder", "out.txt"});
  fs::create_directory(folder / "taken");
  expect_error([&] { write_text(folder / "taken", "x", Overwrite::Replace); },
               {(folder / "taken").string(), "is a folder"});
  EXPECT_EQ(folder_entries(folder.path()), std::set<std::string>{"taken"});
}

TEST(Export, PngCarriesTheInfoAsTextChunksAndKeepsThePixels) {
  // given a 13 x 7 RGB image with a gradient and an image-completion ExportInfo
  const int width = 13, height = 7;
  std::vector<uint8_t> pixels(width * height * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  ExportInfo info = sample_info();
  info.model_name = "cifar-small";
  info.prompt = "cat.png";
  info.prompt_rows_kept = 4;
  info.sample_number = 3;
  info.sample_count = 4;
  info.kv_cache = "float16";
  TempFolder folder;

  // when
  write_png_export(folder / "out.png", pixels.data(), width, height, 3, info);

  // then every tEXt chunk reads back, in order, and the pixels are exact
  const PngText text = png_text_chunks(read_whole_file(folder / "out.png"));
  const PngText expected = {{"Software", "STX Studio"},
                            {"Model", "cifar-small"},
                            {"Model hash", "sha256:0123abcd"},
                            {"Seed", "1234"},
                            {"Sample", "3 of 4"},
                            {"Temperature", "0.9"},
                            {"Top-k", "40"},
                            {"Top-p", "0.95"},
                            {"KV cache", "float16"},
                            {"Prompt rows kept", "4"},
                            {"Prompt", "cat.png"},
                            {"Creation Time", "2024-05-01T12:34:56Z"}};
  EXPECT_EQ(text, expected);
  EXPECT_EQ(export_png_text(info), expected);
  EXPECT_EQ(load_image_bytes(folder / "out.png", ImageShape{height, width, 3}), pixels);
}

TEST(Export, UnknownFieldsAreLeftOut) {
  ExportInfo info;  // no model, prompt or time known
  const PngText text = export_png_text(info);
  const PngText expected = {
      {"Software", "STX Studio"}, {"Seed", "0"}, {"Temperature", "1"}, {"Top-k", "0"}, {"Top-p", "1"}};
  EXPECT_EQ(text, expected);
  const WavInfoText wav = export_wav_info(info);
  EXPECT_EQ(wav.artist, "");
  EXPECT_EQ(wav.date, "");
  EXPECT_EQ(wav.comment, "Seed: 0; Temperature: 1; Top-k: 0; Top-p: 1");

  TempFolder folder;
  const std::vector<uint8_t> bytes(100, 128);
  write_wav(folder / "plain.wav", bytes.data(), bytes.size(), 12000, info);
  EXPECT_EQ(read_wav(folder / "plain.wav").comment, wav.comment);
}

TEST(Export, NumberedPaths) {
  EXPECT_EQ(numbered_path("out.png", 1, 1), fs::path("out.png"));
  EXPECT_EQ(numbered_path("out.png", 1, 3), fs::path("out-1.png"));
  EXPECT_EQ(numbered_path("dir/out.png", 3, 3), fs::path("dir/out-3.png"));
  EXPECT_EQ(numbered_path("/abs/dir/sound.wav", 12, 20), fs::path("/abs/dir/sound-12.wav"));
  EXPECT_EQ(numbered_path("out", 2, 2), fs::path("out-2"));
  EXPECT_EQ(numbered_path("archive.tar.gz", 1, 2), fs::path("archive.tar-1.gz"));
  expect_error([] { numbered_path("out.png", 0, 3); }, {"out.png", "0 of 3"});
  expect_error([] { numbered_path("out.png", 4, 3); }, {"out.png", "4 of 3"});
  expect_error([] { numbered_path("out.png", 1, 0); }, {"out.png"});
}

TEST(Export, TextIsWrittenByteForByte) {
  TempFolder folder;
  const std::string bytes("caf\xC3\xA9\n\0\xFF\xFE raw", 13);
  write_text(folder / "out.txt", bytes);
  EXPECT_EQ(file_text(folder / "out.txt"), bytes);
  write_text(folder / "empty.txt", "");
  EXPECT_EQ(fs::file_size(folder / "empty.txt"), 0u);
}

TEST(Export, CheckExportTargetFailsFastBeforeGeneration) {
  TempFolder folder;
  EXPECT_NO_THROW(check_export_target(folder / "new.wav", Overwrite::Refuse));
  test::write_file(folder / "there.wav", std::string("x"));
  expect_error([&] { check_export_target(folder / "there.wav", Overwrite::Refuse); },
               {"there.wav", "already exists and is kept"});
  EXPECT_NO_THROW(check_export_target(folder / "there.wav", Overwrite::Replace));
}

TEST(Export, TimestampIsIso8601Utc) {
  const std::string now = utc_timestamp_now();
  ASSERT_EQ(now.size(), 20u) << now;
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

// Every front end's exports say the same of a sample: model, weights, settings, cache type, seed, and which
// of the request's samples it is.
TEST(Export, SampleExportInfoRecordsTheRequestAndTheSampleIndex) {
  SamplingSettings settings;
  settings.temperature = 0.8;
  settings.top_k = 40;
  settings.top_p = 0.95;
  const ExportInfo info = sample_export_info("audio", "abc123", settings, true, 42, 2, 4);
  EXPECT_EQ(info.model_name, "audio");
  EXPECT_EQ(info.model_hash, "abc123");
  EXPECT_EQ(info.seed, 42u);
  EXPECT_EQ(info.temperature, 0.8);
  EXPECT_EQ(info.top_k, 40);
  EXPECT_EQ(info.top_p, 0.95);
  EXPECT_EQ(info.kv_cache, "float16");
  EXPECT_EQ(info.sample_number, 3);  // index 2, counted from 1 in the file
  EXPECT_EQ(info.sample_count, 4);
  EXPECT_EQ(info.created.size(), std::string("2024-05-01T12:34:56Z").size()) << info.created;
  const PngText text = export_png_text(info);
  bool sample_line = false;
  for (const auto& [key, value] : text) sample_line = sample_line || (key == "Sample" && value == "3 of 4");
  EXPECT_TRUE(sample_line);
  EXPECT_EQ(sample_export_info("text", "", settings, false, 1, 0, 1).kv_cache, "float32");
}

}  // namespace
}  // namespace stx::engine
