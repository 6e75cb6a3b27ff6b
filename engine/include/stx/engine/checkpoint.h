// Checkpoints: a folder holding config.json, model.safetensors and, while training, train_state.json and
// train_state.safetensors (design.md). A training run's folder holds checkpoints/step-NNNNNNNN/ folders and
// latest.json, which names the latest and the best one and is written last.
//
//   stx::engine::ModelBundle m = stx::engine::load_checkpoint(stx::engine::resolve_checkpoint(dir));
//   at::Tensor logits = m.model->forward(bytes);
//
// Every file is untrusted: sizes are limited, the safetensors parser checks the format, config.json must
// agree with the tensors (names and shapes), and NaN or Inf weights are refused. Errors are stx::engine::Error
// naming the file and the reason.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "stx/engine/sample_request.h"
#include "stx/models/model_config.h"
#include "stx/models/sparse_transformer.h"

namespace torch::optim {
class AdamW;
}

namespace stx::engine {

// Where a training run stands; train_state.json holds it.
struct TrainState {
  int64_t step = 0;               // optimiser steps done
  int64_t samples_drawn = 0;      // the data position: index of the next training crop
  uint64_t seed = 0;              // the run's seed, kept for the record and for the crops
  double best_bits_per_byte = std::numeric_limits<double>::infinity();
  int64_t best_step = -1;
  double last_bits_per_byte = std::numeric_limits<double>::quiet_NaN();  // latest validation
  double train_seconds = 0;       // wall time summed over every run that led here
  int64_t world_size = 1;
};

struct ModelBundle {
  std::filesystem::path folder;
  models::ModelConfig config;
  nlohmann::json training;        // the recipe that trained it (may be empty for hand-made models)
  models::SparseTransformer model{nullptr};
  std::optional<TrainState> state;  // present when the folder holds train_state.json
  SamplingSettings sampling;      // config.json's "sampling": where `stx sample` and the studio start
  std::string weights_hash;       // FNV-1a 64 of model.safetensors, hex: identifies the model in exports
};

// `path` may be a checkpoint folder (it holds config.json) or a run folder (it holds latest.json); for a run
// folder the latest checkpoint is chosen, or the best one with prefer_best. A bare name that is no folder
// here is looked up among the bundled models (bundled_models.h): "image", "audio", "text".
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path, bool prefer_best = false);

// config.json and train_state.json of a checkpoint folder, checked, without building the model.
struct CheckpointInfo {
  models::ModelConfig config;
  nlohmann::json training;
  std::optional<TrainState> state;
  SamplingSettings sampling;
};

// config.json's optional "sampling" object: the settings this model samples best at, chosen by measuring
// its samples (docs/model-quality.md), which `stx sample`, `stx-bench quality` and the studio start from
// unless told otherwise. Absent fields keep the plain defaults. sampling_from_json throws Error naming the
// field (unknown names, wrong types and out-of-range values alike); sampling_to_json writes only the
// fields that differ from the plain defaults.
SamplingSettings sampling_from_json(const nlohmann::json& j);
nlohmann::json sampling_to_json(const SamplingSettings& settings);
CheckpointInfo read_checkpoint_info(const std::filesystem::path& folder);

// The ModelBundle::weights_hash of a checkpoint folder, read in chunks (no model is built, nothing of the
// weights' size is held in memory). Throws Error naming model.safetensors when it cannot be read.
std::string weights_hash_of(const std::filesystem::path& folder);

// Throws Error naming config.json when the model it describes could not be this folder's (its weights file
// holds fewer bytes than the parameters need as halves) or would not fit in the memory available. Counted
// from the config alone: load_checkpoint calls it before it builds anything.
void check_model_fits(const std::filesystem::path& folder, const models::ModelConfig& config);

// Loads config.json and model.safetensors (fp32 or fp16 weights), and train_state.json when present.
ModelBundle load_checkpoint(const std::filesystem::path& folder);

// Restores the optimiser moments and the CPU random generator from train_state.safetensors.
void load_optimizer_state(const std::filesystem::path& folder, models::SparseTransformer& model,
                          torch::optim::AdamW& optimizer);

// Writes the files of a checkpoint into `folder` (a staging folder; the caller commits it). With
// `state` and `optimizer`, the training state too; with `state` alone, only train_state.json (the record of
// the training, as in an exported model); fp16_weights halves model.safetensors.
void write_checkpoint_files(const std::filesystem::path& folder, const models::ModelConfig& config,
                            const nlohmann::json& training, const SamplingSettings& sampling,
                            models::SparseTransformer& model, const TrainState* state,
                            const torch::optim::AdamW* optimizer, bool fp16_weights = false);

// Exports the model of `source` (a checkpoint or run folder, resolved as above) as a new model folder
// `target`, to share or to bundle: config.json with its training recipe, model.safetensors (fp16 when asked)
// and train_state.json (steps, wall time, validation bits/byte; no optimiser state: it can be fine-tuned with
// init_from, not resumed). Built beside `target` and committed by one rename. An existing `target` is an
// Error unless `replace`; then the old folder is moved aside, and restored if the commit fails. `sampling`
// replaces the source's sampling defaults (checked first); none keeps them.
void export_model(const std::filesystem::path& source, const std::filesystem::path& target, bool fp16_weights,
                  bool replace, const std::optional<SamplingSettings>& sampling = std::nullopt);

// A training run's folder: checkpoints/step-NNNNNNNN/ plus latest.json.
class RunFolder {
 public:
  explicit RunFolder(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }
  // Writes a checkpoint for `step` through write_files(staging_folder), commits it atomically, records it in
  // latest.json (and as best when is_best), then deletes checkpoints beyond the last keep_last plus the best.
  // Returns the committed folder. On failure nothing already saved is touched.
  std::filesystem::path commit(int64_t step, bool is_best, int keep_last,
                               const std::function<void(const std::filesystem::path& staging)>& write_files);
  // Throws Error naming the folder and the reason when the folder could not be made or written (a file in
  // the way, no permission, a read-only file system), so that a new run fails before its first step instead
  // of pausing at its first save. Creates nothing.
  void check_can_create() const;
  std::optional<std::filesystem::path> latest() const;
  std::optional<std::filesystem::path> best() const;
  std::filesystem::path folder_for(int64_t step) const;

 private:
  void write_latest(const std::string& latest, const std::string& best) const;
  void apply_retention(int keep_last) const;
  std::filesystem::path root_;
};

}  // namespace stx::engine
