// Steps a decoder through known bytes and gathers its logits, for comparing decoders with a full forward.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "stx/models/token_decoder.h"

namespace stx::test {

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
