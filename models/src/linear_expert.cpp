#include "stx/models/linear_expert.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace stx::models {

ExpertInputs linear_expert_inputs(const LinearExpertConfig& config, const at::Tensor& bytes, int64_t history) {
  if (bytes.dim() != 2 || history < 0 || bytes.size(1) <= history) {
    throw std::invalid_argument("linear expert: expected [batch, history + length] bytes with length >= 1, got " +
                                std::to_string(bytes.dim()) + " dimensions for a history of " +
                                std::to_string(history));
  }
  const at::Tensor rows = bytes.to(at::kCPU).to(at::kByte).contiguous();
  const int64_t batch = rows.size(0), total = rows.size(1), length = total - history;
  ExpertInputs out;
  out.log_probs = at::empty({batch, length, 256}, at::kFloat);
  out.predicted = at::empty({batch, length}, at::kLong);
  out.scale_feature = at::empty({batch, length}, at::kFloat);
  const uint8_t* in = rows.data_ptr<uint8_t>();
  float* log_probs = out.log_probs.data_ptr<float>();
  int64_t* predicted = out.predicted.data_ptr<int64_t>();
  float* feature = out.scale_feature.data_ptr<float>();
  at::parallel_for(0, batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      LinearPredictor predictor(config);
      const uint8_t* row = in + b * total;
      predictor.push_history(row, history);
      for (int64_t i = 0; i < length; ++i) {
        const int64_t at = b * length + i;
        predictor.log_probs(log_probs + at * 256);
        predicted[at] = predictor.predicted_byte();
        feature[at] = predictor.scale_feature();
        if (i + 1 < length) predictor.push(row[history + i]);
      }
    }
  });
  return out;
}

}  // namespace stx::models
