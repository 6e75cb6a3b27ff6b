// Drawing the next byte of each of a batch of samples from its 256 logits, in one kernel: the sampler of a
// decode step that stays on the GPU. The rule is the host sampler's (engine's pick_byte) exactly:
//
//   temperature 0: the most likely byte (the first of equal maxima);
//   otherwise p_r = exp((logit_r - max) / temperature) over the bytes ranked most likely first (ties in
//   byte order; byte order when neither top-k nor top-p cuts), 0 where p_r < min_p; the first top_k ranks
//   (0: all), cut after the first rank whose cumulative share p_r / sum(p) reaches top_p; then the first
//   rank r whose running sum passes u times the kept total, or past the end the last rank with p_r > 0.
//
// In double precision, the sums in rank order as the host adds them, so that the same logits and uniform
// give the same byte on either device. With mix_log_probs the logits drawn from are
// network_weight * logits + expert_weight * mix_log_probs (the audio models' product of experts), in
// float32 as ExpertDecoder forms them.
//
//   stx::kernels::DrawParams p;
//   p.logits = logits; p.uniforms = u; p.bytes = out; p.rows = batch;
//   p.temperature = 0.9; p.top_p = 0.95;
//   stx::kernels::draw_bytes(p);
#pragma once

#include <cstdint>

#include "stx/kernels/attention.h"  // Device

namespace stx::kernels {

struct DrawParams {
  const float* logits = nullptr;  // [rows, 256], row stride logits_stride (0: 256)
  int64_t logits_stride = 0;
  const float* mix_log_probs = nullptr;   // optional [rows, 256], same stride: the expert's log p
  const float* network_weight = nullptr;  // with mix_log_probs: [1] each, in the same memory
  const float* expert_weight = nullptr;
  const double* uniforms = nullptr;  // [rows], each in [0, 1)
  int64_t* bytes = nullptr;          // [rows], written: the byte drawn for each row
  int64_t rows = 0;
  double temperature = 1.0;  // >= 0
  int64_t top_k = 0;         // 0..256, 0: no cut
  double top_p = 1.0;        // (0, 1]
  double min_p = 0.0;        // [0, 1)
  Device device = Device::cpu;
  void* stream = nullptr;  // cudaStream_t for Device::cuda
};

void draw_bytes(const DrawParams& p);

}  // namespace stx::kernels
