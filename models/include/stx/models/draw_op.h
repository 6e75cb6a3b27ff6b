// kernels::draw_bytes on torch tensors, on their device and current stream: the sampler of a decode step
// that stays on the GPU (engine's pick_bytes runs it).
//
//   at::Tensor bytes = stx::models::draw_bytes(logits, uniforms, rule);   // [B] int64, on logits' device
//
// logits [B, 256] float32, uniforms [B] double, on one device; `rule` gives the temperature, top_k, top_p
// and min_p (its pointers are ignored). With expert_log_probs ([B, 256] float32) and the weights ([1]
// float32 each), the bytes are drawn from network_weight * logits + expert_weight * expert_log_probs.
#pragma once

#include <ATen/core/Tensor.h>

#include "stx/kernels/sampling.h"

namespace stx::models {

at::Tensor draw_bytes(const at::Tensor& logits, const at::Tensor& uniforms, const kernels::DrawParams& rule,
                      const at::Tensor& expert_log_probs = at::Tensor(),
                      const at::Tensor& network_weight = at::Tensor(),
                      const at::Tensor& expert_weight = at::Tensor());

}  // namespace stx::models
