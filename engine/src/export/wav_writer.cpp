// WAV export: mu-law bytes at 12 kHz -> float -> libsamplerate -> 16-bit PCM WAV built by libsndfile in
// memory (sf_open_virtual), so that the finished file reaches the disk through write_file_atomic.
#include <samplerate.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "stx/engine/data/audio_io.h"
#include "stx/engine/error.h"
#include "stx/engine/export/export.h"
#include "stx/engine/mulaw.h"

namespace stx::engine {
namespace {

// RIFF sizes are 32-bit: leave room for the header and the INFO chunk below 4 GiB of 2-byte samples.
constexpr double kMaxWavFrames = (4294967295.0 - (1 << 20)) / 2;

// libsndfile writes the header, seeks back to patch sizes at close, and may read what it wrote.
struct MemoryOutput {
  std::string bytes;
  sf_count_t position = 0;
};

sf_count_t output_length(void* user) {
  return static_cast<sf_count_t>(static_cast<MemoryOutput*>(user)->bytes.size());
}

sf_count_t output_seek(sf_count_t offset, int whence, void* user) {
  auto* output = static_cast<MemoryOutput*>(user);
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = output->position; break;
    case SEEK_END: base = static_cast<sf_count_t>(output->bytes.size()); break;
    default: return -1;
  }
  if (base + offset < 0) return -1;
  output->position = base + offset;
  return output->position;
}

sf_count_t output_read(void* destination, sf_count_t count, void* user) {
  auto* output = static_cast<MemoryOutput*>(user);
  const auto size = static_cast<sf_count_t>(output->bytes.size());
  if (count <= 0 || output->position >= size) return 0;
  const sf_count_t n = std::min(count, size - output->position);
  std::copy_n(output->bytes.data() + output->position, n, static_cast<char*>(destination));
  output->position += n;
  return n;
}

sf_count_t output_write(const void* source, sf_count_t count, void* user) {
  auto* output = static_cast<MemoryOutput*>(user);
  if (count <= 0) return 0;
  const auto end = static_cast<size_t>(output->position + count);
  if (end > output->bytes.size()) output->bytes.resize(end);  // a seek past the end leaves zeros between
  std::copy_n(static_cast<const char*>(source), count, output->bytes.data() + output->position);
  output->position += count;
  return count;
}

sf_count_t output_tell(void* user) { return static_cast<MemoryOutput*>(user)->position; }

void check_output_rate(int output_rate, const std::string& failure) {
  if (std::find(std::begin(kWavOutputRates), std::end(kWavOutputRates), output_rate) ==
      std::end(kWavOutputRates)) {
    throw Error(failure + "the output rate " + std::to_string(output_rate) +
                " Hz is not supported (expected 12000, 44100 or 48000 Hz)");
  }
}

// [count] mu-law bytes at 12 kHz -> [about count * output_rate / 12000] floats in [-1, 1].
std::vector<float> decode_and_resample(const uint8_t* mulaw_bytes, size_t count, int output_rate,
                                       const std::string& failure) {
  const double ratio = static_cast<double>(output_rate) / kSampleRate;
  const double output_frames = std::ceil(static_cast<double>(count) * ratio);
  if (output_frames > kMaxWavFrames) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.0f s", output_frames / output_rate);
    throw Error(failure + seconds + " at " + std::to_string(output_rate) + " Hz is too long for a WAV file");
  }
  std::vector<float> samples(count);
  std::transform(mulaw_bytes, mulaw_bytes + count, samples.begin(), &mulaw_decode);
  if (output_rate == kSampleRate || count == 0) return samples;

  // Medium quality (121 dB rejection) is far beyond the ~38 dB SNR of 8-bit mu-law and the 96 dB of
  // 16-bit output; best quality took 1.5 s per minute of audio to 48 kHz here against medium's 0.5 s.
  std::vector<float> resampled(static_cast<size_t>(output_frames) + 16);
  SRC_DATA block{};
  block.data_in = samples.data();
  block.input_frames = static_cast<long>(count);
  block.data_out = resampled.data();
  block.output_frames = static_cast<long>(resampled.size());
  block.src_ratio = ratio;
  if (const int error = src_simple(&block, SRC_SINC_MEDIUM_QUALITY, 1)) {
    throw Error(failure + "resampling to " + std::to_string(output_rate) + " Hz failed (" +
                src_strerror(error) + ")");
  }
  resampled.resize(static_cast<size_t>(block.output_frames_gen));
  // The sinc filter overshoots near full scale, and libsndfile wraps (not clips) floats past +-1 in PCM.
  for (float& sample : resampled) sample = std::clamp(sample, -1.0f, 1.0f);
  return resampled;
}

std::string encode(const uint8_t* mulaw_bytes, size_t count, int output_rate, const ExportInfo& info,
                   const std::string& failure) {
  check_output_rate(output_rate, failure);
  if (count > 0 && mulaw_bytes == nullptr) throw Error(failure + "no sample bytes were given");
  const std::vector<float> samples = decode_and_resample(mulaw_bytes, count, output_rate, failure);

  MemoryOutput output;
  SF_VIRTUAL_IO io{&output_length, &output_seek, &output_read, &output_write, &output_tell};
  SF_INFO format{};
  format.samplerate = output_rate;
  format.channels = 1;
  format.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  std::unique_ptr<SNDFILE, int (*)(SNDFILE*)> file(sf_open_virtual(&io, SFM_WRITE, &format, &output),
                                                   &sf_close);
  if (!file) throw Error(failure + "cannot start the WAV encoder (libsndfile: " + sf_strerror(nullptr) + ")");

  // Set before any audio, so libsndfile puts the LIST/INFO chunk in the header. Empty strings are
  // refused by libsndfile, and mean "not known" here anyway.
  const WavInfoText text = export_wav_info(info);
  const std::pair<int, const std::string*> strings[] = {{SF_STR_TITLE, &text.title},
                                                        {SF_STR_ARTIST, &text.artist},
                                                        {SF_STR_SOFTWARE, &text.software},
                                                        {SF_STR_COMMENT, &text.comment},
                                                        {SF_STR_DATE, &text.date}};
  for (const auto& [type, value] : strings) {
    if (value->empty()) continue;
    if (const int error = sf_set_string(file.get(), type, value->c_str())) {
      throw Error(failure + "cannot store the WAV metadata (libsndfile: " + sf_error_number(error) + ")");
    }
  }
  const auto frames = static_cast<sf_count_t>(samples.size());
  if (sf_writef_float(file.get(), samples.data(), frames) != frames) {
    throw Error(failure + "cannot encode the WAV (libsndfile: " + sf_strerror(file.get()) + ")");
  }
  // sf_close writes the final sizes into the header: its result decides whether the bytes are whole.
  if (const int error = sf_close(file.release())) {
    throw Error(failure + "cannot finish the WAV (libsndfile: " + sf_error_number(error) + ")");
  }
  return std::move(output.bytes);
}

}  // namespace

std::string encode_wav(const uint8_t* mulaw_bytes, size_t count, int output_rate, const ExportInfo& info) {
  return encode(mulaw_bytes, count, output_rate, info, "WAV export: ");
}

void write_wav(const std::filesystem::path& path, const uint8_t* mulaw_bytes, size_t count, int output_rate,
               const ExportInfo& info, Overwrite overwrite) {
  const std::string failure = "cannot write " + path.string() + ": ";
  check_output_rate(output_rate, failure);
  check_export_target(path, overwrite);
  write_file_atomic(path, encode(mulaw_bytes, count, output_rate, info, failure), overwrite);
}

}  // namespace stx::engine
