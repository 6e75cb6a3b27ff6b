// How much memory a training step needs, worked out from the model's shape before any step runs, so that a
// run too large for the machine is refused with a reason instead of being killed by the kernel's OOM killer
// (a 65,536-sample audio model at the default batch of 8 needs about 43 GB).
//
//   check_training_memory(config, micro_batch);   // throws Error when a step cannot fit
#pragma once

#include <cstdint>

#include "stx/models/model_config.h"

namespace stx::engine {

// Bytes one process holds at the peak of a step with `micro_batch` sequences of config.context bytes: the
// activations that backward keeps (per token and layer: about 11 d_model + 2 d_ff floats, or only the
// block input with recomputation, plus one block's worth while its backward runs), the logits and their
// gradient, and the weights with their gradients and two AdamW moments. Within about 15% of the peak
// resident memory measured at 65,536 tokens (audio, 5.5 GB; recomputed, 2.3 GB).
uint64_t training_step_bytes(const models::ModelConfig& config, int64_t micro_batch);

// MemAvailable of /proc/meminfo: what the system can give without swapping. 0 when it cannot be read.
uint64_t available_memory_bytes();

// Throws Error when training_step_bytes exceeds the memory available now, naming the need, what is
// available and what to change. Does nothing when the available memory cannot be read.
void check_training_memory(const models::ModelConfig& config, int64_t micro_batch);

}  // namespace stx::engine
