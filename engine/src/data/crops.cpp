#include "stx/engine/data/crops.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "stx/engine/error.h"

namespace stx::engine {
namespace {

// splitmix64's output function applied to the index-th state: a counter-based generator, so any crop can
// be drawn directly without drawing the ones before it.
uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

CropSampler::CropSampler(const std::vector<uint8_t>& stream, size_t context, size_t record_bytes,
                         uint64_t seed)
    : stream_(&stream), context_(context), record_bytes_(record_bytes), seed_(seed), start_count_(0) {
  if (context == 0) throw Error("the crop context must be at least 1 byte");
  if (record_bytes == 0) throw Error("the record size must be at least 1 byte");
  if (stream.size() < context) {
    throw Error("the data (" + std::to_string(stream.size()) + " bytes) is shorter than the context (" +
                std::to_string(context) + " bytes)");
  }
  start_count_ = (stream.size() - context) / record_bytes + 1;
}

size_t CropSampler::start_of(uint64_t index) const {
  // The modulo's bias is below start_count / 2^64, far under anything training could notice.
  return static_cast<size_t>(splitmix64(seed_, index) % start_count_) * record_bytes_;
}

void CropSampler::copy(uint64_t index, uint8_t* out) const {
  std::memcpy(out, stream_->data() + start_of(index), context_);
}

size_t CropSampler::copy_with_past(uint64_t index, size_t past, uint8_t* out) const {
  const size_t start = start_of(index), before = std::min(past, start);
  std::memcpy(out, stream_->data() + start - before, before + context_);
  return before;
}

namespace {
// Streams of their own for the noise, apart from the crops' starts.
constexpr uint64_t kNoiseChoiceStream = 0x6E6F697365636831ull, kNoiseStream = 0x6E6F697365766131ull;
}  // namespace

bool crop_is_noisy(uint64_t seed, uint64_t index, double share) {
  if (share <= 0) return false;
  const double u = static_cast<double>(splitmix64(seed ^ kNoiseChoiceStream, index) >> 11) * 0x1.0p-53;
  return u < share;
}

void add_crop_noise(uint64_t seed, uint64_t index, int steps, uint8_t* bytes, size_t count) {
  if (steps <= 0) return;
  const uint64_t stream = splitmix64(seed ^ kNoiseStream, index);
  const auto span = static_cast<uint64_t>(2 * steps + 1);
  for (size_t i = 0; i < count; ++i) {
    const int shift = static_cast<int>(splitmix64(stream, i) % span) - steps;
    bytes[i] = static_cast<uint8_t>(std::clamp(static_cast<int>(bytes[i]) + shift, 0, 255));
  }
}

std::vector<std::pair<size_t, size_t>> evaluation_windows(size_t stream_bytes, size_t context,
                                                          size_t record_bytes, size_t max_windows) {
  if (record_bytes == 0) throw Error("the record size must be at least 1 byte");
  if (context < record_bytes) {
    throw Error("the context (" + std::to_string(context) + " bytes) is shorter than one record (" +
                std::to_string(record_bytes) + " bytes)");
  }
  const size_t window = context / record_bytes * record_bytes;
  const size_t count = stream_bytes / window + (stream_bytes % window != 0 ? 1 : 0);
  const auto window_at = [&](size_t k) {
    const size_t begin = k * window;
    return std::make_pair(begin, std::min(begin + window, stream_bytes));
  };
  std::vector<std::pair<size_t, size_t>> windows;
  if (max_windows == 0 || count <= max_windows) {
    windows.reserve(count);
    for (size_t k = 0; k < count; ++k) windows.push_back(window_at(k));
    return windows;
  }
  // floor(i * count / max_windows): strictly increasing since count > max_windows, the first window is 0.
  windows.reserve(max_windows);
  for (size_t i = 0; i < max_windows; ++i) {
    const auto k = static_cast<size_t>(static_cast<unsigned __int128>(i) * count / max_windows);
    windows.push_back(window_at(k));
  }
  return windows;
}

}  // namespace stx::engine
