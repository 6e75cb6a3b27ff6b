#include "stx/models/amplitude_decoder.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "stx/models/mulaw.h"

namespace stx::models {

AmplitudeDecoder::AmplitudeDecoder(SparseTransformer& model, std::unique_ptr<TokenDecoder> network)
    : WrappingDecoder(std::move(network)), taps_(model->config().amplitude_taps), d_(model->config().d_model) {
  if (taps_ < 1 || !model->amplitude) throw std::invalid_argument("AmplitudeDecoder: the model has no amplitude inputs");
  at::NoGradGuard no_grad;
  const at::Tensor weight = model->amplitude->weight.detach().to(at::kCPU, at::kFloat).contiguous();
  map_.assign(weight.data_ptr<float>(), weight.data_ptr<float>() + weight.numel());
  tokens_.assign(static_cast<size_t>(network_->batch() * network_->capacity()), 256);
}

void AmplitudeDecoder::check(const int32_t* tokens, int64_t count, int64_t positions) const {
  if (position() + positions > capacity()) {
    throw std::out_of_range("decoder: position " + std::to_string(position() + positions - 1) +
                            " is past the capacity of " + std::to_string(capacity()));
  }
  for (int64_t k = 0; k < count; ++k) {
    if (tokens[k] < 0 || tokens[k] > 256) {
      throw std::invalid_argument("decoder: input token " + std::to_string(tokens[k]) + " is outside 0..256");
    }
  }
}

void AmplitudeDecoder::fill_row(int64_t sample, int64_t row, int64_t position, const float* added) {
  // Input k is the amplitude of byte position - taps + k, the input token of position - taps + k + 1; zero
  // before byte 0 (and for the start token), as amplitude_inputs pads the forward's rows.
  const std::array<float, 256>& amplitude = mulaw_amplitude_table();
  const uint16_t* history = tokens_.data() + sample * capacity();
  std::vector<float> inputs(static_cast<size_t>(taps_), 0.0f);
  for (int64_t k = 0; k < taps_; ++k) {
    const int64_t input_position = position - taps_ + k + 1;
    if (input_position >= 1 && history[input_position] < 256) inputs[static_cast<size_t>(k)] = amplitude[history[input_position]];
  }
  float* out = rows_.data() + row * d_;
  for (int64_t i = 0; i < d_; ++i) {
    const float* w = map_.data() + i * taps_;
    float sum = 0.0f;
    for (int64_t k = 0; k < taps_; ++k) sum += w[k] * inputs[static_cast<size_t>(k)];
    out[i] = added ? sum + added[row * d_ + i] : sum;
  }
}

void AmplitudeDecoder::step(const int32_t* input_tokens, float* logits) {
  const float* added = take_added();
  const int64_t batch = this->batch(), position = this->position();
  check(input_tokens, batch, 1);
  for (int64_t b = 0; b < batch; ++b) tokens_[static_cast<size_t>(b * capacity() + position)] = static_cast<uint16_t>(input_tokens[b]);
  rows_.resize(static_cast<size_t>(batch * d_));
  at::parallel_for(0, batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) fill_row(b, b, position, added);
  });
  network_->add_to_next_embedding(rows_.data());
  network_->step(input_tokens, logits);
}

void AmplitudeDecoder::step_common_prefix(const int32_t* input_tokens, int64_t count) {
  const float* added = take_added();
  if (count < 1) throw std::invalid_argument("decoder: a common prefix needs at least one position");
  const int64_t position = this->position();
  check(input_tokens, count, count);
  // The rows are positions of sample 0 that read each other's inputs: every one is recorded first.
  for (int64_t k = 0; k < count; ++k) tokens_[static_cast<size_t>(position + k)] = static_cast<uint16_t>(input_tokens[k]);
  rows_.resize(static_cast<size_t>(count * d_));
  at::parallel_for(0, count, 16, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) fill_row(0, k, position + k, added);
  });
  network_->add_to_next_embedding(rows_.data());
  network_->step_common_prefix(input_tokens, count);
  for (int64_t b = 1; b < batch(); ++b) {  // every sample shares the prefix
    std::copy_n(tokens_.begin() + position, count, tokens_.begin() + b * capacity() + position);
  }
}

}  // namespace stx::models
