// Training: AdamW with linear warm-up then cosine decay, gradient clipping and accumulation, validation
// bits/byte every K steps, checkpoints (keep last N plus best), exact resume, cooperative cancellation with a
// final checkpoint, and data parallelism across processes.
//
//   stx::engine::TrainOptions options;
//   options.model = stx::models::preset("text-small");
//   options.data = "corpus/"; options.out = "runs/text";
//   std::atomic<bool> cancel{false};
//   stx::engine::JobEnded end = stx::engine::train(options, [](const stx::engine::Event& e) { ... }, cancel);
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "stx/engine/device.h"
#include "stx/engine/distributed_settings.h"
#include "stx/engine/events.h"
#include "stx/models/model_config.h"

namespace stx::engine {

struct TrainOptions {
  models::ModelConfig model;                        // the architecture of a new run (ignored on resume)
  std::filesystem::path data;                       // folder or file; on resume, empty means the recipe's
  std::filesystem::path out;                        // run folder; on resume, empty means the resumed run's
  std::optional<std::filesystem::path> resume;      // a run folder or a checkpoint folder
  // Fine-tuning: a new run whose architecture and starting weights come from this model (a run folder or a
  // checkpoint folder); `model` is then ignored, and the optimiser and step count start afresh.
  std::optional<std::filesystem::path> init_from;
  // The activation precision of a new run or a fine-tune, over the model's own (models::Precision; bf16 on
  // a CPU with AVX512-BF16 runs the linear layers in bf16). None keeps the model's. Not for a resumed run,
  // which keeps its checkpoint's.
  std::optional<models::Precision> precision;
  // Audio models: the number of earlier samples the model also sees as amplitudes (models::ModelConfig::
  // amplitude_taps), over the model's own. A fine-tune of a model without them adds them starting at zero,
  // so that it begins as the same model; a model that has them keeps its number. Not for a resumed run.
  std::optional<int64_t> amplitude_taps;
  // Audio models: the order of the linear-prediction expert (models::ModelConfig::expert, its other fields
  // at their defaults), over the model's own. A fine-tune of a model without one adds it so that the model
  // starts as the expert alone (the network's weight in the product at zero); a model that has one keeps
  // it. Not for a resumed run.
  std::optional<int64_t> expert_order;
  // Training that survives its own samples: on this share of the crops, every byte that the network and
  // the expert read (the inputs and the expert's past) is moved by a whole number of mu-law steps drawn
  // uniformly from [-noise_steps, noise_steps], while the targets stay the clean bytes. A generated history
  // is the model's own noisy draws; trained only on clean histories, a model leans on them too much.
  double noise_share = 0.0;
  int64_t noise_steps = 0;

  int64_t steps = 1000;          // total optimiser steps of the run (a resumed run continues up to this)
  int64_t batch = 8;             // sequences per optimiser step, over all processes and accumulation steps
  int64_t accumulation = 1;      // the batch is split in this many sequential micro-batches
  // Bytes per training sequence; 0 is the model's context. Shorter windows (text and audio) train the first
  // `window` positions on crops of that length: cheaper steps with more sequences each, for the early
  // stages of a curriculum that ends at the whole context.
  int64_t window = 0;
  double learning_rate = 3e-4;
  double min_learning_rate_ratio = 0.1;  // cosine decay ends at learning_rate * this
  int64_t warmup_steps = 100;
  double weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.95;
  double clip_norm = 1.0;        // <= 0 disables clipping
  int64_t eval_every = 100;      // validation every K steps (and at every checkpoint); 0 = only at checkpoints
  int64_t eval_windows = 32;     // validation windows per pass (0 = the whole split); the last step scores
                                 // the whole split when it is at most 16 MiB
  int64_t checkpoint_every = 500;
  int keep_last = 3;
  uint64_t seed = 1;             // weights, crops and dropout
  double validation_fraction = 0.05;
  bool deterministic = false;    // one thread: a resumed run then matches an uninterrupted one bit for bit
  // Where the model trains (resolve_training_device: cuda is an error when there is none; data-parallel rank r
  // takes GPU r mod count). Not part of the recipe: a run may resume on another device.
  DeviceChoice device = DeviceChoice::automatic;
  // A checkpoint that cannot be written pauses training, and the save is retried this often.
  double save_retry_seconds = 30.0;
  DistributedSettings distributed;

  // Range checks; throws Error naming the option.
  void validate() const;
};

// The training part of config.json: everything above except paths and the process layout.
nlohmann::json recipe_to_json(const TrainOptions& options);
// Fills the recipe fields of `options` from json (unknown keys ignored, missing keys keep their value).
void recipe_from_json(const nlohmann::json& json, TrainOptions& options);

// The learning rate at `step` (0-based): linear warm-up to learning_rate, then cosine decay to
// learning_rate * min_learning_rate_ratio at `steps`.
double learning_rate_at(const TrainOptions& options, int64_t step);

// Runs the job on the calling thread and returns how it ended (also sent as the last event). Setting
// `cancel` stops it after the current micro-batch; a final checkpoint is then written. Errors that a user
// can fix end the job as failed with a plain message, not as an exception.
JobEnded train(TrainOptions options, const EventSink& sink, const std::atomic<bool>& cancel);

}  // namespace stx::engine
