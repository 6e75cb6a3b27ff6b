#include "stx/models/expert_decoder.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace stx::models {
namespace {

std::vector<float> floats_of(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU).to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

ExpertDecoder::ExpertDecoder(SparseTransformer& model, std::unique_ptr<TokenDecoder> network)
    : WrappingDecoder(std::move(network)), config_(model->config().expert), d_(model->config().d_model) {
  if (!config_.enabled() || !model->expert_byte) {
    throw std::invalid_argument("ExpertDecoder: the model has no linear-prediction expert");
  }
  at::NoGradGuard no_grad;
  byte_embedding_ = floats_of(model->expert_byte->weight);
  scale_map_ = floats_of(model->expert_scale->weight);
  network_weight_ = floats_of(model->network_weight).at(0);
  expert_weight_ = floats_of(model->expert_weight).at(0);
  const int64_t batch = network_->batch();
  predictors_.assign(static_cast<size_t>(batch), LinearPredictor(config_));
  history_.assign(static_cast<size_t>(batch * network_->capacity()), 0);
  log_probs_.resize(static_cast<size_t>(batch * 256));
}

const LinearPredictor& ExpertDecoder::predictor(int64_t sample) const {
  if (prefix_unshared_) return predictors_.front();
  return predictors_.at(static_cast<size_t>(sample));
}

const uint8_t* ExpertDecoder::history(int64_t sample) const {
  if (sample < 0 || sample >= batch())
    throw std::out_of_range("ExpertDecoder: no sample " + std::to_string(sample));
  // Before their first own step, every sample's history is still sample 0's (share_prefix()).
  return history_.data() + (prefix_unshared_ ? 0 : sample) * capacity();
}

void ExpertDecoder::read_input(int64_t sample, int64_t row, int32_t token, int64_t position, const float* added) {
  LinearPredictor& p = predictors_[static_cast<size_t>(sample)];
  if (token >= 0 && token < 256 && position >= 1) {  // the input of position i is byte i - 1
    p.push(token);
    history_[static_cast<size_t>(sample * capacity() + position - 1)] = static_cast<uint8_t>(token);
  }
  float* out = rows_.data() + row * d_;
  const float* e = byte_embedding_.data() + p.predicted_byte() * d_;
  const float feature = p.scale_feature();
  for (int64_t i = 0; i < d_; ++i) out[i] = e[i] + feature * scale_map_[static_cast<size_t>(i)];
  if (added) {
    for (int64_t i = 0; i < d_; ++i) out[i] += added[row * d_ + i];
  }
}

void ExpertDecoder::share_prefix() {
  if (!prefix_unshared_) return;
  const int64_t length = position();
  for (size_t b = 1; b < predictors_.size(); ++b) {
    predictors_[b] = predictors_[0];
    std::copy_n(history_.begin(), length, history_.begin() + static_cast<int64_t>(b) * capacity());
  }
  prefix_unshared_ = false;
}

void ExpertDecoder::step(const int32_t* input_tokens, float* logits) {
  const float* added = take_added();
  const int64_t batch = this->batch(), position = this->position();
  if (position >= capacity()) {
    throw std::out_of_range("decoder: position " + std::to_string(position) + " is past the capacity of " +
                            std::to_string(capacity()));
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (input_tokens[b] < 0 || input_tokens[b] > 256) {
      throw std::invalid_argument("decoder: input token " + std::to_string(input_tokens[b]) + " is outside 0..256");
    }
  }
  share_prefix();
  rows_.resize(static_cast<size_t>(batch * d_));
  // Each sample's predictor is its own: they run side by side (a fit is about a millisecond).
  at::parallel_for(0, batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      read_input(b, b, input_tokens[b], position, added);
      predictors_[static_cast<size_t>(b)].log_probs(log_probs_.data() + b * 256);
    }
  });
  network_->add_to_next_embedding(rows_.data());
  network_->step(input_tokens, logits);
  for (int64_t k = 0; k < batch * 256; ++k) {
    logits[k] = network_weight_ * logits[k] + expert_weight_ * log_probs_[static_cast<size_t>(k)];
  }
}

void ExpertDecoder::step_common_prefix(const int32_t* input_tokens, int64_t count) {
  const float* added = take_added();
  if (count < 1) throw std::invalid_argument("decoder: a common prefix needs at least one position");
  const int64_t position = this->position();
  if (position + count > capacity()) {
    throw std::out_of_range("decoder: positions " + std::to_string(position) + ".." +
                            std::to_string(position + count - 1) + " run past the capacity of " +
                            std::to_string(capacity()));
  }
  for (int64_t k = 0; k < count; ++k) {
    if (input_tokens[k] < 0 || input_tokens[k] > 256) {
      throw std::invalid_argument("decoder: input token " + std::to_string(input_tokens[k]) + " is outside 0..256");
    }
  }
  // The network's own rule, checked before anything is read into the predictors.
  if (position != common_prefix_) {
    throw std::logic_error("decoder: a common prefix must come first, but position " + std::to_string(position) +
                           " follows steps of samples of their own");
  }
  rows_.assign(static_cast<size_t>(count * d_), 0.0f);
  for (int64_t k = 0; k < count; ++k) read_input(0, k, input_tokens[k], position + k, added);
  network_->add_to_next_embedding(rows_.data());
  network_->step_common_prefix(input_tokens, count);
  common_prefix_ = position + count;
  prefix_unshared_ = batch() > 1;
}

void ExpertDecoder::rewind(int64_t position) {
  network_->rewind(position);
  common_prefix_ = std::min(common_prefix_, position);
  share_prefix();
  for (int64_t b = 0; b < batch(); ++b) {
    LinearPredictor& p = predictors_[static_cast<size_t>(b)];
    p.reset();
    // Step i reads byte i - 1: before step `position`, bytes 0 .. position - 2 were read.
    if (position >= 2) p.push_history(history_.data() + b * capacity(), position - 1);
  }
}

void warm_for_timing(ExpertDecoder& decoder, const uint8_t* bytes, int64_t count) {
  decoder.share_prefix();
  for (LinearPredictor& p : decoder.predictors_) p.push_history(bytes, count);
}

}  // namespace stx::models
