// Bits per byte of a model on a byte stream: the mean of -log2 p(byte | earlier bytes of its window).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "stx/engine/device.h"
#include "stx/models/sparse_transformer.h"

namespace stx::engine {

struct EvaluationResult {
  double bits_per_byte = 0;
  int64_t bytes = 0;    // bytes scored
  int64_t windows = 0;
};

// Moves the model's weights to where it is to be scored (the CPU, or the GPU torch_device picks for rank 0);
// the evaluations below run wherever the model's weights are.
void move_model_to(models::SparseTransformer& model, DeviceKind device);

// Scores the stream in consecutive windows of `context` bytes aligned to records (evaluation_windows), each
// conditioned only on its own earlier bytes; max_windows > 0 spreads that many windows over the stream.
// Windows of equal length run `batch` at a time. Runs in eval mode without gradients and restores the
// model's mode. Returns early with what was scored when *cancel becomes true.
EvaluationResult evaluate_bits_per_byte(models::SparseTransformer& model, const std::vector<uint8_t>& stream,
                                        int64_t context, int64_t record_bytes, int64_t max_windows = 0,
                                        int64_t batch = 8, const std::atomic<bool>* cancel = nullptr);

// Sliding evaluation: windows of `context` bytes every context / 2 bytes (the last one ending at the stream's
// end); the first scores all its bytes, each later one only the bytes no earlier window scored. Every byte is
// scored once, and every byte after the first window is predicted from at least context / 2 earlier bytes,
// closer to how the model is used when it continues a text than windows that each start cold. Costs about
// twice the plain evaluation. `windows` counts forward windows; `bytes` is the stream's size.
EvaluationResult evaluate_bits_per_byte_sliding(models::SparseTransformer& model, const std::vector<uint8_t>& stream,
                                                int64_t context, int64_t batch = 8,
                                                const std::atomic<bool>* cancel = nullptr);

}  // namespace stx::engine
