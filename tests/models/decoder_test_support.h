// What the decoder tests share: a small model with awkward sizes, weights far from the initialisation, and
// stepping a decoder through known bytes to compare its logits with a full forward.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard: not in ATen.h of LibTorch 2.x

#include <cstdint>
#include <vector>

#include "stx/kernels/pattern.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"
#include "stx/models/token_decoder.h"

namespace stx::test {

// Three layers of three heads of 16, d_ff 80 (not a multiple of any vector tile), blocks of 16; dropout on,
// which the decoders must match with the model in eval mode, where it is off.
inline models::ModelConfig small_decoder_config(kernels::Pattern pattern,
                                                kernels::Combination mode = kernels::Combination::merged) {
  models::ModelConfig c;
  c.name = "decoder-test";
  c.kind = models::DataKind::text;
  c.context = 70;
  c.d_model = 48;
  c.layers = 3;
  c.heads = 3;
  c.d_ff = 80;
  c.pattern = pattern;
  c.stride = 7;
  c.summary = 2;
  c.mode = mode;
  c.block = 16;
  c.dropout = 0.1;
  return c;
}

// Images of 5 x 4 x 3: three position axes.
inline models::ModelConfig image_decoder_config() {
  models::ModelConfig c = small_decoder_config(kernels::Pattern::strided);
  c.kind = models::DataKind::image;
  c.image_height = 5;
  c.image_width = 4;
  c.image_channels = 3;
  c.context = 60;
  c.stride = 12;  // one image row
  return c;
}

// Audio with amplitude inputs (ModelConfig::amplitude_taps): 9 taps, more than the strided window of 7, so
// that a tap reaches back past the band and across a common prefix's chunks.
inline models::ModelConfig audio_decoder_config() {
  models::ModelConfig c = small_decoder_config(kernels::Pattern::strided);
  c.kind = models::DataKind::audio;
  c.amplitude_taps = 9;
  return c;
}

// Weights far from the small initialisation, so that a wrong term cannot hide under the tolerance.
inline models::SparseTransformer random_model(const models::ModelConfig& config) {
  at::manual_seed(17);
  models::SparseTransformer model(config);
  at::NoGradGuard no_grad;
  for (at::Tensor p : model->parameters()) p.copy_(at::randn(p.sizes()) * 0.3);
  model->eval();
  return model;
}

// Steps `decoder` from position `from` to the end of `bytes` ([B, T] long) and returns its [B, T, 256]
// logits; rows before `from` stay zero.
inline at::Tensor decoded_logits(stx::models::TokenDecoder& decoder, const at::Tensor& bytes,
                                 int64_t from = 0) {
  const int64_t batch = bytes.size(0), length = bytes.size(1);
  at::Tensor out = at::zeros({batch, length, 256});
  std::vector<int32_t> inputs(static_cast<size_t>(batch));
  std::vector<float> logits(static_cast<size_t>(batch * 256));
  for (int64_t i = from; i < length; ++i) {
    for (int64_t b = 0; b < batch; ++b)
      inputs[b] = i == 0 ? 256 : static_cast<int32_t>(bytes[b][i - 1].item<int64_t>());
    decoder.step(inputs.data(), logits.data());
    out.select(1, i).copy_(at::from_blob(logits.data(), {batch, 256}));
  }
  return out;
}

}  // namespace stx::test
