#pragma once
// Training crops and evaluation windows over a split's byte stream.
//
//   CropSampler sampler(dataset.train, context, dataset.record_bytes, seed);
//   for (uint64_t step = resume_step; ...) sampler.copy(step * batch + b, batch_bytes + b * context);
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace stx::engine {

// Crop `index` of `context` bytes starts at a position drawn by a counter-based hash (splitmix64 of seed
// and index), aligned to record_bytes, so crop k is the same whatever happened before: resuming a run is
// just continuing from the index it reached. The sampler keeps a reference to `stream`, which must outlive it.
class CropSampler {
 public:
  // Throws Error if context == 0, record_bytes == 0 or stream.size() < context.
  CropSampler(const std::vector<uint8_t>& stream, size_t context, size_t record_bytes, uint64_t seed);
  // A multiple of record_bytes, and start_of(index) + context <= stream.size().
  size_t start_of(uint64_t index) const;
  // Writes `context` bytes to out.
  void copy(uint64_t index, uint8_t* out) const;
  // Writes up to `past` bytes before the crop (fewer near the stream's start), then the crop: out holds
  // past + context bytes. Returns how many bytes before the crop were written.
  size_t copy_with_past(uint64_t index, size_t past, uint8_t* out) const;

 private:
  const std::vector<uint8_t>* stream_;
  size_t context_;
  size_t record_bytes_;
  uint64_t seed_;
  size_t start_count_;  // number of aligned starts that leave room for a whole crop
};

// Training noise (TrainOptions::noise_share, noise_steps), drawn like the crops from the seed and the
// crop's index, so a resumed run draws what an uninterrupted one would: whether crop `index` is noisy, and
// the noise itself, every byte moved by a whole number of steps in [-steps, steps], clamped to 0..255.
bool crop_is_noisy(uint64_t seed, uint64_t index, double share);
void add_crop_noise(uint64_t seed, uint64_t index, int steps, uint8_t* bytes, size_t count);

// Consecutive non-overlapping windows [begin, end) of at most `context` bytes (rounded down to whole records)
// covering the stream from 0; the last one may be shorter. With max_windows > 0 and more windows than that,
// max_windows of them are returned, evenly spread over the stream, in order.
// Throws Error if record_bytes == 0 or context < record_bytes.
std::vector<std::pair<size_t, size_t>> evaluation_windows(size_t stream_bytes, size_t context,
                                                          size_t record_bytes, size_t max_windows = 0);

}  // namespace stx::engine
