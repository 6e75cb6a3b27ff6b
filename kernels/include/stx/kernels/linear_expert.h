// The linear-prediction expert's part of a decode step for a batch of samples (models' DeviceLinearExpert
// keeps the state; LinearPredictor is the host's one-sample original), as two kernels, so that an audio
// model's step on the GPU costs two launches for it instead of some forty small tensor operations:
//
//   linear_expert_predict: per sample, from its count c of bytes read, the prediction of byte c,
//     mean = clamp(sum_k a[k] x[c - 1 - k], -1, 1) over the last `order` amplitudes (zero before the first),
//     scale = max(min_scale, mean of the min(c, scale_window) errors known) (initial_scale before any),
//     byte = the mu-law encoding of mean, feature = (log(scale) + feature_shift) / feature_divisor,
//     log p of every byte under Laplace(mean, max(scale, half_widths[byte])) integrated over its bin
//     [edges[k], edges[k + 1]) with the floor f: log((1 - 256 f) p + f); and the embedding rows
//     byte_embedding[byte] + feature * scale_map.
//   linear_expert_push: per sample, reads the drawn byte (its amplitude from `amplitudes`), puts
//     |x - mean| into error slot c mod scale_window and x into the history, and counts it.
//
// Each sample's count lives in memory (counts[b]), so a block of steps captured as a CUDA graph replays at
// the right positions. Double precision throughout; the embedding rows in float32 as the host forms them.
#pragma once

#include <cstdint>

#include "stx/kernels/attention.h"  // Device

namespace stx::kernels {

struct ExpertStepParams {
  int64_t batch = 0, order = 0, scale_window = 0, capacity = 0, d = 0;
  double* history = nullptr;              // [batch, order + capacity]: amplitude t at column order + t
  const double* coefficients = nullptr;   // [batch, order]: a[k] multiplies the amplitude k + 1 back
  double* errors = nullptr;               // [batch, scale_window]
  int64_t* counts = nullptr;              // [batch]: bytes read so far
  double* mean = nullptr;                 // [batch], written by predict, read by push
  double* scale = nullptr;                // [batch]
  int64_t* predicted = nullptr;           // [batch]
  float* feature = nullptr;               // [batch]
  float* log_probs = nullptr;             // [batch, 256]
  float* embedding_rows = nullptr;        // [batch, d]
  const float* byte_embedding = nullptr;  // [256, d]
  const float* scale_map = nullptr;       // [d]
  const int64_t* bytes = nullptr;         // push: [batch], each 0..255
  // Tables and constants (LinearPredictor's): the amplitude of each byte [256], the bin edges [257] (+-inf
  // at the ends), the distribution's least scale for each predicted byte [256].
  const double* amplitudes = nullptr;
  const double* edges = nullptr;
  const double* half_widths = nullptr;
  double min_scale = 0, initial_scale = 0, probability_floor = 0, feature_shift = 0, feature_divisor = 1;
  Device device = Device::cpu;
  void* stream = nullptr;
};

void linear_expert_predict(const ExpertStepParams& p);
void linear_expert_push(const ExpertStepParams& p);

}  // namespace stx::kernels
