// What a decoder needs for ModelConfig::amplitude_taps: every sample's input tokens so far, from which the
// amplitudes of the last `taps` bytes before a position are read back, as SparseTransformer::forward
// computes them (amplitude_inputs in sparse_transformer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stx::models {

class AmplitudeHistory {
 public:
  AmplitudeHistory() = default;  // a model without amplitude inputs: taps() == 0
  AmplitudeHistory(int64_t taps, int64_t batch, int64_t capacity);

  int64_t taps() const { return taps_; }
  // The input token (0..256) of `position` for `sample`. Positions are kept until overwritten, so a rewind
  // needs nothing: the positions before it still hold what was read there.
  void record(int64_t sample, int64_t position, int32_t token) {
    tokens_[static_cast<std::size_t>(sample * capacity_ + position)] = static_cast<uint16_t>(token);
  }
  // out[k], k < taps: the amplitude of byte position - taps + k (the input of position - taps + k + 1),
  // zero before byte 0. Every input up to `position` must be recorded.
  void inputs(int64_t sample, int64_t position, float* out) const;
  // Positions [from, to) of sample 0 to every other sample: a common prefix.
  void share(int64_t batch, int64_t from, int64_t to);

 private:
  int64_t taps_ = 0, capacity_ = 0;
  std::vector<uint16_t> tokens_;  // [batch, capacity]
  std::vector<float> amplitude_;  // [257]: each byte's amplitude; the start token's is 0
};

}  // namespace stx::models
