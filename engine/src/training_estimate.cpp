#include "stx/engine/training_estimate.h"

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>
#include <sys/resource.h>

#include <chrono>

#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"
#include "stx/engine/training_memory.h"

namespace stx::engine {

namespace {

uint64_t peak_resident_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024u;  // Linux reports kilobytes
}

}  // namespace

TrainingEstimate estimate_training(const TrainOptions& options, int measure_steps, const std::atomic<bool>* cancel) {
  if (measure_steps < 1 || measure_steps > 100) throw Error("the estimate measures 1 to 100 steps");
  models::ModelConfig config = options.model;
  if (options.init_from || options.resume) {
    config = read_checkpoint_info(resolve_checkpoint(options.init_from ? *options.init_from : *options.resume)).config;
  }
  if (options.amplitude_taps) config.amplitude_taps = *options.amplitude_taps;  // a few more parameters
  try {
    config.validate();
  } catch (const models::ConfigError& e) {
    throw Error(std::string("model: ") + e.what());
  }
  TrainOptions checked = options;
  checked.model = config;
  checked.validate();

  // The micro-batch is what one forward pass holds; accumulation repeats it.
  const int64_t micro_batch = std::max<int64_t>(1, options.batch / std::max<int64_t>(1, options.accumulation));
  check_training_memory(config, micro_batch);  // measuring a step that cannot fit would end the process

  TrainingEstimate estimate;
  const uint64_t peak_before = peak_resident_bytes();
  at::manual_seed(options.seed);
  models::SparseTransformer model(config);
  model->train();
  estimate.parameters = model->parameter_count();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(options.learning_rate));
  const at::Tensor bytes = at::randint(0, 256, {micro_batch, config.context}, at::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    for (int64_t micro = 0; micro < options.accumulation; ++micro) {
      const at::Tensor logits = model->forward(bytes);
      at::cross_entropy_loss(logits.reshape({-1, 256}), bytes.reshape({-1})).backward();
    }
    optimizer.step();
  };
  using Clock = std::chrono::steady_clock;
  step();  // warm-up: first-touch allocations and thread start-up are not the run's pace
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < measure_steps; ++i) {
    if (cancel && cancel->load()) {
      estimate.cancelled = true;
      break;
    }
    step();
    ++estimate.steps_measured;
  }
  if (estimate.steps_measured > 0) {
    estimate.seconds_per_step =
        std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(estimate.steps_measured);
  }
  estimate.total_seconds = estimate.seconds_per_step * static_cast<double>(options.steps);
  const uint64_t grown = peak_resident_bytes() - std::min(peak_before, peak_resident_bytes());
  estimate.memory_bytes = std::max<uint64_t>(grown, static_cast<uint64_t>(estimate.parameters) * 16u);
  return estimate;
}

}  // namespace stx::engine
