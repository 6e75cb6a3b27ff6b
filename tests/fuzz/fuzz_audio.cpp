// libFuzzer target: the audio loader through sf_open_virtual (libsndfile, mixdown, libsamplerate).
//   ./build-fuzz/tests/fuzz/fuzz_audio -max_total_time=60
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "stx/engine/data/audio_io.h"
#include "stx/engine/error.h"

// libvorbis (under libsndfile) leaks a vorbis_info when it fails to open some crafted multi-stream Ogg files
// (xiph/vorbis#125, 5784 bytes per file): not ours to fix, and it would stop every run within seconds.
// Only libvorbis is excused; a leak through libsndfile itself (say, a missing sf_close) is still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libvorbis\n"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Two seconds at most: compressed formats can promise long audio in few bytes, and the length check is
  // the same code whatever the limit.
  stx::engine::AudioLimits limits;
  limits.max_seconds = 2.0;
  try {
    for (const float sample : stx::engine::audio_12k_from_memory(data, size, "fuzz.wav", limits)) {
      if (!(std::fabs(sample) <= 1.0f)) __builtin_trap();  // samples are promised in [-1, 1], never NaN
    }
  } catch (const stx::engine::Error&) {
  }
  return 0;
}
