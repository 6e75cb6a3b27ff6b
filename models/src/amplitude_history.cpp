#include "stx/models/amplitude_history.h"

#include <algorithm>
#include <array>

#include "stx/models/mulaw.h"

namespace stx::models {

AmplitudeHistory::AmplitudeHistory(int64_t taps, int64_t batch, int64_t capacity)
    : taps_(taps), capacity_(capacity), tokens_(static_cast<size_t>(batch * capacity), 256), amplitude_(257, 0.0f) {
  // The forward's own table (mulaw_amplitudes reads it too), so that the decoder's inputs are its inputs.
  const std::array<float, 256>& table = mulaw_amplitude_table();
  std::copy(table.begin(), table.end(), amplitude_.begin());
}

void AmplitudeHistory::inputs(int64_t sample, int64_t position, float* out) const {
  const uint16_t* tokens = tokens_.data() + sample * capacity_;
  for (int64_t k = 0; k < taps_; ++k) {
    const int64_t input_position = position - taps_ + k + 1;
    out[k] = input_position < 1 ? 0.0f : amplitude_[tokens[input_position]];
  }
}

void AmplitudeHistory::share(int64_t batch, int64_t from, int64_t to) {
  if (taps_ == 0 || from >= to) return;
  for (int64_t b = 1; b < batch; ++b) {
    std::copy(tokens_.begin() + from, tokens_.begin() + to, tokens_.begin() + b * capacity_ + from);
  }
}

}  // namespace stx::models
