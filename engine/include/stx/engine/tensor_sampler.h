// pick_byte for a batch of samples as tensor operations on the logits' own device: the sampler of a decode
// step that stays on the GPU (no copy of the logits to the host, no synchronisation), and on the CPU the same
// code, which the tests hold to pick_byte.
//
//   at::Tensor bytes = stx::engine::pick_bytes(logits, settings, uniforms);   // [B] int64, on logits' device
//
// logits: [B, 256] floating point; uniforms: [B] in [0, 1), one per sample, on the same device (drawn on the
// host from each sample's own random stream and uploaded a block of steps at a time, so a seed gives the
// same draws on either device). Byte b of row i is the one pick_byte(logits[i], settings, uniforms[i]) picks:
// the same ranking (most likely first, ties in byte order), the same min-p floor, top-k and top-p cut and
// inverse-CDF walk, in double precision.
#pragma once

#include <ATen/core/Tensor.h>

#include "stx/engine/sample_request.h"
#include "stx/models/torch_decoder.h"

namespace stx::engine {

at::Tensor pick_bytes(const at::Tensor& logits, const SamplingSettings& settings, const at::Tensor& uniforms);

// A block of steps drawn on the decoder's device: step k feeds the bytes drawn at step k - 1 (first_inputs
// [B] int64 for the first: each sample's last byte, or 256) and draws with uniforms[k] ([steps, B] on the
// device). Returns the drawn bytes [steps, B] int64 on the device: the caller reads a whole block back at
// once, where the host loop copies the logits down every step. The bytes are those of decoder.step() and
// pick_byte() with the same uniforms.
at::Tensor decode_steps_on_device(models::TorchDecoder& decoder, const at::Tensor& first_inputs,
                                  const SamplingSettings& settings, const at::Tensor& uniforms);

}  // namespace stx::engine
