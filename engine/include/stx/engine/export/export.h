#pragma once
// Exports of generated samples: PNG images, WAV audio and raw text, each written atomically (a temporary
// file in the destination folder, fsync, rename) and carrying how it was made (model, seed, settings).
//
//   ExportInfo info;
//   info.model_name = "audio-small";
//   info.model_hash = checkpoint_hash;
//   info.seed = 1234;
//   info.prompt = "clip intro.wav";
//   check_export_target(out, overwrite);                       // before generating: fail fast on a clash
//   write_wav(out, bytes.data(), bytes.size(), 48000, info, overwrite);
//   write_png_export(numbered_path(out, i + 1, n), pixels, 32, 32, 3, info, overwrite);
//   write_text(out, text, overwrite);
//
// Exports never replace an existing file unless the caller passes Overwrite::Replace. Every failure throws
// stx::engine::Error whose what() is one line naming the file and the reason.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/export/png_writer.h"
#include "stx/engine/sample_request.h"

namespace stx::engine {

// How a sample was made. Empty strings and an empty prompt_rows_kept are left out of the metadata.
struct ExportInfo {
  std::string model_name;
  std::string model_hash;  // identifies the exact weights the sample came from
  uint64_t seed = 0;
  double temperature = 1.0;
  int top_k = 0;       // 0: off
  double top_p = 1.0;  // 1: off
  double min_p = 0.0;  // 0: off, and then not written
  // The KV cache's type, "float16" or "float32" (kv_cache_name): the sampled bytes depend on it, so a seed
  // reproduces a sample only with the same type. Empty leaves it out.
  std::string kv_cache;
  // How the sample began, in words: "unconditional", "clip intro.wav", the prompt text. Cut to
  // kMaxPromptMetadataBytes (ending in "...") and NULs made spaces: libsndfile 1.2 drops every INFO
  // string on reading once one of them is about 2 KB long.
  std::string prompt;
  std::optional<int> prompt_rows_kept;  // image completion: rows of the prompt image kept as the prefix
  // Which sample of a request of several this is, from 1 ("Sample: 3 of 4"); left out when sample_count < 2.
  // A sample's random stream depends only on the seed and this number: with the same model, prompt and
  // settings, the seed and the number reproduce it (`stx sample --n 3 --seed S` gives sample 3 as out-3).
  int sample_number = 1;
  int sample_count = 1;
  std::string created;                  // when, e.g. utc_timestamp_now(); empty leaves it out
  std::string software = "STX Studio";
};

inline constexpr size_t kMaxPromptMetadataBytes = 1000;

// How sample `index` (from 0) of a request's `count` samples was made: the model (its name and weights
// hash), the sampling settings, the KV cache type and the seed; created now. Every front end builds its
// exports' metadata here and adds only how the sample began (prompt, prompt_rows_kept).
ExportInfo sample_export_info(const std::string& model_name, const std::string& weights_hash,
                              const SamplingSettings& settings, bool half_precision_cache, uint64_t seed,
                              int index, int count);

// The PNG tEXt pairs, in this order: Software, Model, Model hash, Seed, Sample, Temperature, Top-k, Top-p,
// KV cache, Prompt rows kept, Prompt, Creation Time. Numbers are written locale-independently ("0.9", never "0,9").
PngText export_png_text(const ExportInfo& info);

// The WAV LIST/INFO strings, set through sf_set_string. Empty ones are not written.
struct WavInfoText {
  std::string title;     // INAM: "<model> sample, seed <seed>"
  std::string artist;    // IART: the model name
  std::string software;  // ISFT: libsndfile appends " (libsndfile-<version>)" when writing
  std::string comment;   // ICMT: the PNG pairs from Model to Prompt as "Key: value; Key: value"
  std::string date;      // ICRD: info.created
};
WavInfoText export_wav_info(const ExportInfo& info);

// The current UTC time as ISO 8601, "2024-05-01T12:34:56Z", for ExportInfo::created.
std::string utc_timestamp_now();

// Throws Error if `path` cannot be an export target: it exists and overwrite is Refuse (the message
// says the file is kept; its setting is "overwrite"), it names a folder, or its folder does not exist. Called by every
// writer below; a front end calls it before a long generation so that a clash shows up at once.
void check_export_target(const std::filesystem::path& path, Overwrite overwrite);

// With count > 1 the index-th of count outputs (index from 1): "out.png" -> "out-1.png", "out-2.png"...,
// and "out" -> "out-1". With count 1, path itself. Throws Error when index is outside 1..count.
std::filesystem::path numbered_path(const std::filesystem::path& path, int index, int count);

// PNG with export_png_text(info) as tEXt chunks. pixels: [height, width, channels], channels 1, 3 or 4.
void write_png_export(const std::filesystem::path& path, const uint8_t* pixels, int width, int height,
                      int channels, const ExportInfo& info, Overwrite overwrite = Overwrite::Refuse);

// The output rates a WAV export may have: the models' own rate, and the two every player takes.
inline constexpr int kWavOutputRates[] = {12000, 44100, 48000};

// mulaw_bytes: [count] mu-law bytes at kSampleRate (12 kHz), one per sample, as the audio models emit them.
// Decoded, resampled to output_rate with libsamplerate (any rate but those of kWavOutputRates throws
// Error), and encoded as 16-bit PCM mono WAV with export_wav_info(info) in its LIST/INFO chunk.
// count may be 0 (a valid, empty WAV).
std::string encode_wav(const uint8_t* mulaw_bytes, size_t count, int output_rate, const ExportInfo& info);
void write_wav(const std::filesystem::path& path, const uint8_t* mulaw_bytes, size_t count, int output_rate,
               const ExportInfo& info, Overwrite overwrite = Overwrite::Refuse);

// The generated bytes exactly as they are (any bytes, invalid UTF-8 and NULs included); no metadata.
void write_text(const std::filesystem::path& path, std::string_view bytes,
                Overwrite overwrite = Overwrite::Refuse);

}  // namespace stx::engine
