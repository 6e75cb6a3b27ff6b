#include "stx/engine/data/audio_io.h"

#include <samplerate.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/error.h"
#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

constexpr int kMaxChannels = 64;
constexpr int kMaxSampleRate = 768'000;
// libsamplerate converts by at most 1:256, so 12 kHz can be reached from 47 Hz upwards.
constexpr int kMinSampleRate = (kSampleRate + 255) / 256;
constexpr sf_count_t kChunkFrames = 16384;
// Where a WAV's data chunk is looked for: the chunks before it (fmt, LIST, fact) are small.
constexpr size_t kWavHeadBytes = 64 * 1024;

using SoundFile = std::unique_ptr<SNDFILE, int (*)(SNDFILE*)>;

// sf_open_virtual over a read-only buffer.
struct MemoryFile {
  const uint8_t* data;
  sf_count_t size;
  sf_count_t position;
};

sf_count_t memory_length(void* user) { return static_cast<MemoryFile*>(user)->size; }

sf_count_t memory_seek(sf_count_t offset, int whence, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = file->position; break;
    case SEEK_END: base = file->size; break;
    default: return -1;
  }
  // Offsets come from the file's own headers, so guard the addition against overflow too.
  if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return -1;
  file->position = base + offset;
  return file->position;
}

sf_count_t memory_read(void* destination, sf_count_t count, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  if (count <= 0 || file->position >= file->size) return 0;
  const sf_count_t n = std::min(count, file->size - file->position);
  std::copy_n(file->data + file->position, n, static_cast<uint8_t*>(destination));
  file->position += n;
  return n;
}

sf_count_t memory_write(const void*, sf_count_t, void*) { return 0; }  // read-only

sf_count_t memory_tell(void* user) { return static_cast<MemoryFile*>(user)->position; }

std::string seconds_text(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, seconds == std::floor(seconds) ? "%.0f s" : "%.2f s", seconds);
  return text;
}

// Feeds mono chunks through libsamplerate (or straight through at 12 kHz) into `out`.
class Resampler {
 public:
  Resampler(int sample_rate, const std::string& source_name, std::vector<float>& out)
      : ratio_(static_cast<double>(kSampleRate) / sample_rate),
        source_name_(source_name),
        out_(out),
        state_(nullptr, &src_delete) {
    if (sample_rate == kSampleRate) return;
    int error = 0;
    state_.reset(src_new(SRC_SINC_MEDIUM_QUALITY, 1, &error));
    if (!state_) throw Error(source_name_ + ": cannot start the resampler (" + src_strerror(error) + ")");
  }

  void push(const float* mono, size_t frames, bool end_of_input) {
    if (!state_) {
      out_.insert(out_.end(), mono, mono + frames);
      return;
    }
    size_t used = 0;
    for (;;) {
      SRC_DATA block{};
      block.data_in = mono + used;
      block.input_frames = static_cast<long>(frames - used);
      block.data_out = buffer_;
      block.output_frames = kBufferFrames;
      block.src_ratio = ratio_;
      block.end_of_input = end_of_input ? 1 : 0;
      if (const int error = src_process(state_.get(), &block)) {
        throw Error(source_name_ + ": resampling failed (" + src_strerror(error) + ")");
      }
      out_.insert(out_.end(), buffer_, buffer_ + block.output_frames_gen);
      used += static_cast<size_t>(block.input_frames_used);
      const bool progressed = block.input_frames_used > 0 || block.output_frames_gen > 0;
      if (!progressed || (used == frames && !end_of_input)) break;  // at the end: drain until it stops
    }
  }

 private:
  static constexpr long kBufferFrames = 8192;
  double ratio_;
  const std::string& source_name_;
  std::vector<float>& out_;
  std::unique_ptr<SRC_STATE, SRC_STATE* (*)(SRC_STATE*)> state_;
  float buffer_[kBufferFrames];
};

std::vector<float> decode_to_12k(SNDFILE* file, const SF_INFO& info, const std::string& source_name,
                                 const AudioLimits& limits) {
  if (info.channels <= 0 || info.channels > kMaxChannels) {
    throw Error(source_name + ": the audio has " + std::to_string(info.channels) +
                " channels (expected 1 to " + std::to_string(kMaxChannels) + ")");
  }
  if (info.samplerate < kMinSampleRate || info.samplerate > kMaxSampleRate) {
    throw Error(source_name + ": the audio's sample rate is " + std::to_string(info.samplerate) +
                " Hz (expected " + std::to_string(kMinSampleRate) + " to " + std::to_string(kMaxSampleRate) +
                " Hz)");
  }
  // Checked on the header, then again while reading, since a header may understate the length.
  const double max_frames = limits.max_seconds * info.samplerate;
  const auto refuse_length = [&](double frames) {
    throw Error(source_name + ": " + seconds_text(frames / info.samplerate) + " long, over the limit of " +
                seconds_text(limits.max_seconds));
  };
  // libsndfile gives the largest count for a length it cannot know (a truncated Ogg): then the read loop
  // alone decides, and nothing is reserved on the header's word.
  const bool length_known = info.frames >= 0 && info.frames < SF_COUNT_MAX;
  if (length_known && static_cast<double>(info.frames) > max_frames) refuse_length(static_cast<double>(info.frames));

  std::vector<float> out;
  if (length_known) {
    out.reserve(static_cast<size_t>(static_cast<double>(info.frames) * kSampleRate / info.samplerate) + 16);
  }
  Resampler resampler(info.samplerate, source_name, out);
  const size_t channels = static_cast<size_t>(info.channels);
  std::vector<float> interleaved(static_cast<size_t>(kChunkFrames) * channels);
  std::vector<float> mono(static_cast<size_t>(kChunkFrames));
  double frames_read = 0;
  for (;;) {
    const sf_count_t got = sf_readf_float(file, interleaved.data(), kChunkFrames);
    if (got <= 0) break;
    frames_read += static_cast<double>(got);
    if (frames_read > max_frames) refuse_length(frames_read);
    for (sf_count_t frame = 0; frame < got; ++frame) {
      const float* sample = interleaved.data() + static_cast<size_t>(frame) * channels;
      float sum = 0.0f;
      for (size_t c = 0; c < channels; ++c) sum += sample[c];
      const float value = sum / static_cast<float>(channels);
      // Float files can hold NaN or values past full scale; keep the resampler's input in range.
      mono[static_cast<size_t>(frame)] = std::isnan(value) ? 0.0f : std::clamp(value, -1.0f, 1.0f);
    }
    resampler.push(mono.data(), static_cast<size_t>(got), false);
  }
  if (const int error = sf_error(file); error != SF_ERR_NO_ERROR) {
    throw Error(source_name + ": cannot decode the audio (libsndfile: " + sf_error_number(error) + ")");
  }
  if (!length_known && frames_read == 0) {  // libsndfile's answer for an Ogg cut short: no length, no audio
    throw Error(source_name + ": truncated or damaged: its length is unknown and no audio could be read from it");
  }
  resampler.push(mono.data(), 0, true);
  // The sinc filter overshoots a little near full scale.
  for (float& sample : out) sample = std::clamp(sample, -1.0f, 1.0f);
  return out;
}

// A RIFF/WAVE file whose data chunk claims more bytes than there are after it: how many are missing, or 0.
// `head` is the start of the file (the chunks before the data chunk are small), `file_size` its size.
uint64_t wav_bytes_missing(const uint8_t* head, size_t head_size, uint64_t file_size) {
  auto u32 = [&](size_t at) {
    return static_cast<uint32_t>(head[at]) | static_cast<uint32_t>(head[at + 1]) << 8 |
           static_cast<uint32_t>(head[at + 2]) << 16 | static_cast<uint32_t>(head[at + 3]) << 24;
  };
  if (head_size < 12 || std::memcmp(head, "RIFF", 4) != 0 || std::memcmp(head + 8, "WAVE", 4) != 0) return 0;
  for (size_t at = 12; at + 8 <= head_size;) {
    const uint64_t size = u32(at + 4);
    if (std::memcmp(head + at, "data", 4) == 0) {
      const uint64_t end = at + 8 + size;
      return end > file_size ? end - file_size : 0;
    }
    at += 8 + static_cast<size_t>(size + (size & 1));  // chunks are padded to even sizes
  }
  return 0;
}

void warn_if_wav_truncated(const uint8_t* head, size_t head_size, uint64_t file_size, const std::string& source_name,
                           AudioWarnings* warnings) {
  if (warnings == nullptr) return;
  const uint64_t missing = wav_bytes_missing(head, head_size, file_size);
  if (missing == 0) return;
  warnings->lines.push_back(source_name + ": truncated: its data chunk claims " + std::to_string(missing) +
                            " bytes more than the file holds; read as far as it goes");
}

}  // namespace

std::vector<float> audio_12k_from_memory(const uint8_t* data, size_t size, const std::string& source_name,
                                         const AudioLimits& limits, AudioWarnings* warnings) {
  if (size > limits.max_file_bytes) {
    throw Error(source_name + ": " + std::to_string(size) + " bytes is over the audio file limit of " +
                std::to_string(limits.max_file_bytes) + " bytes");
  }
  MemoryFile memory{data, static_cast<sf_count_t>(size), 0};
  SF_VIRTUAL_IO io{&memory_length, &memory_seek, &memory_read, &memory_write, &memory_tell};
  SF_INFO info{};
  SoundFile file(sf_open_virtual(&io, SFM_READ, &info, &memory), &sf_close);
  if (!file) throw Error(source_name + ": cannot open the audio (libsndfile: " + sf_strerror(nullptr) + ")");
  warn_if_wav_truncated(data, std::min<size_t>(size, kWavHeadBytes), size, source_name, warnings);
  return decode_to_12k(file.get(), info, source_name, limits);
}

std::vector<float> load_audio_12k(const std::filesystem::path& file, const AudioLimits& limits,
                                  AudioWarnings* warnings) {
  // libsndfile reads the descriptor we opened and checked (a FIFO is refused, not read).
  const RegularFile opened = data::open_data_file(file, limits.max_file_bytes);
  const uint64_t file_size = opened.size;
  if (warnings != nullptr) {
    std::vector<uint8_t> head(kWavHeadBytes);
    const size_t got = std::fread(head.data(), 1, head.size(), opened.stream.get());
    warn_if_wav_truncated(head.data(), got, file_size, file.string(), warnings);
    std::rewind(opened.stream.get());
  }
  SF_INFO info{};
  SoundFile sound(sf_open_fd(::fileno(opened.stream.get()), SFM_READ, &info, /*close_desc=*/SF_FALSE), &sf_close);
  if (!sound)
    throw Error(file.string() + ": cannot open the audio (libsndfile: " + sf_strerror(nullptr) + ")");
  return decode_to_12k(sound.get(), info, file.string(), limits);
}

std::vector<uint8_t> load_audio_mulaw(const std::filesystem::path& file, const AudioLimits& limits,
                                      AudioWarnings* warnings) {
  const std::vector<float> samples = load_audio_12k(file, limits, warnings);
  std::vector<uint8_t> bytes(samples.size());
  std::transform(samples.begin(), samples.end(), bytes.begin(), &mulaw_encode);
  return bytes;
}

}  // namespace stx::engine
