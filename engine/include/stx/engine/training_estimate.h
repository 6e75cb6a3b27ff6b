// How long a training run will take and how much memory it needs, measured rather than guessed: a few real
// optimiser steps of the run's model, batch and context on random bytes. The wizard shows this before a run.
#pragma once

#include <atomic>
#include <cstdint>

#include "stx/engine/trainer.h"

namespace stx::engine {

struct TrainingEstimate {
  int steps_measured = 0;
  double seconds_per_step = 0;
  double total_seconds = 0;   // seconds_per_step * options.steps
  int64_t parameters = 0;
  // Weights, gradients and the two AdamW moments (16 bytes a parameter), or the growth of the process's
  // peak resident memory while the steps ran, whichever is larger.
  uint64_t memory_bytes = 0;
  bool cancelled = false;
};

// Builds the model of `options` (options.model, or the model of options.init_from / options.resume), runs one
// warm-up step and then `measure_steps` timed steps on the CPU. Throws Error for options that cannot train.
TrainingEstimate estimate_training(const TrainOptions& options, int measure_steps, const std::atomic<bool>* cancel);

}  // namespace stx::engine
