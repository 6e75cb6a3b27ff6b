// The linear-prediction expert (linear_predictor.h) over a batch of byte sequences, as tensors: what
// SparseTransformer::forward adds to the network's inputs and multiplies into its output.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "stx/models/linear_predictor.h"

namespace stx::models {

struct ExpertInputs {
  at::Tensor log_probs;      // [B, T, 256] float: log p of each byte under the expert
  at::Tensor predicted;      // [B, T] int64: the byte its predicted amplitude encodes to
  at::Tensor scale_feature;  // [B, T] float: LinearPredictor::scale_feature()
};

// bytes: [B, history + T] integers in 0..255 on any device (read on the CPU). Position i < T of row b is
// predicted from bytes [0, history + i) of that row: the expert first reads `history` bytes that the
// network does not see (a training crop's past), then each position's own earlier bytes. The last byte of
// a row is never read. Returned on the CPU; the rows run in parallel.
ExpertInputs linear_expert_inputs(const LinearExpertConfig& config, const at::Tensor& bytes, int64_t history);

}  // namespace stx::models
