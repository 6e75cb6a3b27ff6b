#pragma once
// Audio files to 12 kHz mono samples (the paper's rate), through libsndfile (WAV, FLAC, OGG, AIFF and
// whatever else it opens) and libsamplerate (SRC_SINC_MEDIUM_QUALITY). Files are read in chunks.
// Refused with an Error naming the file: channels 0 or > 64, a sample rate of 0, below 47 Hz (under the
// resampler's 1:256 ratio limit) or above 768 kHz, longer than AudioLimits::max_seconds, larger than
// max_file_bytes, or anything libsndfile cannot open (its sf_strerror text is in the message).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stx::engine {

inline constexpr int kSampleRate = 12000;

struct AudioLimits {
  double max_seconds = 4 * 3600.0;
  uint64_t max_file_bytes = 4ull << 30;
};

// What was read anyway but deserves a word: one line each, naming the file ("FILE: truncated: ...").
struct AudioWarnings {
  std::vector<std::string> lines;
};

// Channels are averaged to mono. Samples are clamped to [-1, 1]; NaN samples in float files become 0.
// A length the file does not state is read to the real end, under max_seconds; when nothing can be read
// then (libsndfile's answer for an Ogg cut short), it is refused as truncated. A WAV whose
// data chunk claims more bytes than the file holds is read as far as it goes, with a warning.
std::vector<float> load_audio_12k(const std::filesystem::path& file, const AudioLimits& limits = {},
                                  AudioWarnings* warnings = nullptr);
// The same from bytes in memory (sf_open_virtual); source_name is used in error messages.
std::vector<float> audio_12k_from_memory(const uint8_t* data, size_t size, const std::string& source_name,
                                         const AudioLimits& limits = {}, AudioWarnings* warnings = nullptr);
// load_audio_12k, then one mu-law byte per sample.
std::vector<uint8_t> load_audio_mulaw(const std::filesystem::path& file, const AudioLimits& limits = {},
                                      AudioWarnings* warnings = nullptr);

}  // namespace stx::engine
