// The training loop. One process, or one of several data-parallel processes: each draws its share of the
// same global crops, the gradients are averaged, and every process takes the same step. Only rank 0
// writes checkpoints and reports events.
#include "stx/engine/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/types.h>  // first: clip_grad.h uses torch::Tensor without including it

#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "stx/engine/allocator.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/data/crops.h"
#include "stx/engine/data/dataset.h"
#include "stx/engine/device.h"
#include "torch_device.h"
#include "distributed.h"
#include "stx/engine/error.h"
#include "stx/engine/evaluate.h"
#include "stx/engine/model_data.h"
#include "stx/engine/training_memory.h"

namespace stx::engine {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Rates over the last steps, so the ETA follows the current speed rather than the start-up.
class RateMeter {
 public:
  void add(double seconds, double tokens) {
    window_.emplace_back(seconds, tokens);
    seconds_ += seconds;
    tokens_ += tokens;
    if (window_.size() > 20) {
      seconds_ -= window_.front().first;
      tokens_ -= window_.front().second;
      window_.pop_front();
    }
  }
  double tokens_per_second() const { return seconds_ > 0 ? tokens_ / seconds_ : 0; }
  double seconds_per_step() const { return window_.empty() ? 0 : seconds_ / static_cast<double>(window_.size()); }

 private:
  std::deque<std::pair<double, double>> window_;
  double seconds_ = 0, tokens_ = 0;
};

JobEnded failed_run(const std::string& message, const std::vector<std::string>& settings) {
  return JobEnded{JobEnded::Outcome::failed, message, {}, settings};
}

// A message for an allocation failure: what LibTorch asked for, and what to change.
std::string out_of_memory_message(const std::string& what) {
  return "out of memory (" + what + "): try a smaller batch, a shorter context, or a config with recompute: true";
}

struct Run {
  TrainOptions options;
  models::ModelConfig config;
  int64_t window = 0;  // bytes per training sequence: options.window, or the context
  nlohmann::json recipe;
  SamplingSettings sampling;  // the source model's sampling defaults, kept by a resume or a fine-tune
  models::SparseTransformer model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  TrainState state;
  Dataset data;
  std::unique_ptr<DataParallel> parallel;
  at::Device device{at::kCPU};
  bool reporting = true;  // rank 0
};

void emit(const Run& run, const EventSink& sink, Event event) {
  if (run.reporting && sink) sink(event);
}

void log(const Run& run, const EventSink& sink, const std::string& text, LogLine::Level level = LogLine::Level::info) {
  emit(run, sink, LogLine{level, text});
}

// The learning rate of the product of experts' lambda and w over the weights'. Adam moves each parameter
// by about the learning rate a step whatever its gradient: at 2e-4 a lambda starting at zero would take
// thousands of steps to reach the network's share, while the weights move as fast relative to their
// size (about 0.02) as lambda does here relative to 1.
constexpr double kMixRateFactor = 50.0;

// Builds the model and optimiser of a new run, or restores them from a checkpoint.
void prepare(Run& run, const EventSink& sink) {
  TrainOptions& o = run.options;
  std::optional<ModelBundle> resumed;
  if (o.resume) {
    const fs::path folder = resolve_checkpoint(*o.resume);
    resumed = load_checkpoint(folder);
    if (!resumed->state) throw Error(folder.string() + ": holds no train_state.json, so it cannot be resumed");
    std::error_code ec;
    if (!fs::exists(folder / "train_state.safetensors", ec)) {
      throw Error(folder.string() + ": an exported model without optimiser state cannot be resumed; "
                  "fine-tune it (start a new run from it) instead",
                {"init_from"});
    }
    // The recipe travels with the checkpoint; the caller's steps and paths win when given.
    TrainOptions from_checkpoint = o;
    recipe_from_json(resumed->training, from_checkpoint);
    from_checkpoint.steps = o.steps;
    if (!o.data.empty()) from_checkpoint.data = o.data;
    if (o.out.empty()) from_checkpoint.out = folder.parent_path().parent_path();
    o = from_checkpoint;
    run.config = resumed->config;
    run.sampling = resumed->sampling;
    run.state = *resumed->state;
    log(run, sink, "resuming " + folder.string() + " at step " + std::to_string(run.state.step));
  } else if (o.init_from) {
    const fs::path folder = resolve_checkpoint(*o.init_from);
    resumed = load_checkpoint(folder);
    run.config = resumed->config;
    run.sampling = resumed->sampling;
    run.state.seed = o.seed;
    log(run, sink, "fine-tuning " + folder.string() + " (" + run.config.name + ")");
  } else {
    run.config = o.model;
    run.state.seed = o.seed;
  }
  if (o.precision) run.config.precision = *o.precision;  // validate() below refuses it on resume
  if (o.amplitude_taps && *o.amplitude_taps != run.config.amplitude_taps) {
    if (o.init_from && run.config.amplitude_taps > 0) {
      throw Error("the model already sees " + std::to_string(run.config.amplitude_taps) +
                      " earlier samples as amplitudes; a fine-tune keeps that number",
                  {"amplitude_taps"});
    }
    run.config.amplitude_taps = *o.amplitude_taps;
    try {
      run.config.validate();
    } catch (const models::ConfigError& e) {
      throw Error(std::string(e.what()), {"amplitude_taps"});
    }
  }
  if (o.expert_order && *o.expert_order != run.config.expert.order) {
    if (run.config.expert.enabled()) {
      throw Error("the model already has a linear-prediction expert of order " +
                      std::to_string(run.config.expert.order) + "; a fine-tune keeps it",
                  {"expert_order"});
    }
    run.config.expert = models::LinearExpertConfig{};
    run.config.expert.order = *o.expert_order;
    try {
      run.config.validate();
    } catch (const models::ConfigError& e) {
      throw Error(std::string(e.what()), {"expert_order"});
    }
  }
  o.validate();
  if (o.data.empty()) throw Error("no training data given", {"data"});
  if (o.out.empty()) throw Error("no output folder given", {"out"});
  std::error_code exists_error;
  if (!o.resume && fs::exists(o.out / "config.json", exists_error)) {
    throw Error(o.out.string() + " is a model folder; a run writes its own folder beside models: choose another output folder",
                {"out"});
  }
  // Rank 0 writes the run; the others may not even see its folder (several machines).
  if (!o.resume && run.reporting) RunFolder(o.out).check_can_create();
  if (!o.resume && RunFolder(o.out).latest()) {
    throw Error(o.out.string() + " already holds a training run; resume it to continue it, or choose another output folder",
                {"resume", "out"});
  }
  if (o.window > run.config.context) {
    throw Error("the training window of " + std::to_string(o.window) + " bytes is longer than the model's context of " +
                std::to_string(run.config.context) + " bytes", {"window"});
  }
  if (o.window > 0 && o.window != run.config.context && run.config.kind == models::DataKind::image) {
    throw Error("an image model trains on whole images of " + std::to_string(run.config.context) +
                " bytes: it takes no other training window", {"window"});
  }
  run.window = o.window > 0 ? o.window : run.config.context;
  // Before anything large is allocated: a step that cannot fit is refused with its size, rather than ended
  // part-way by the kernel's OOM killer.
  const int64_t world = std::max<int64_t>(1, o.distributed.world_size);
  models::ModelConfig step_shape = run.config;  // what one step holds: window bytes per sequence
  step_shape.context = run.window;
  check_training_memory(step_shape, std::max<int64_t>(1, o.batch / o.accumulation / world));
  run.recipe = recipe_to_json(o);
  run.state.world_size = o.distributed.world_size;

  run.device = torch_device(resolve_training_device(o.device), o.distributed.rank);
  if (run.device.is_cuda()) {
    log(run, sink,
        "training on " + device_description(DeviceKind::cuda, run.device.index()) + " (device " +
            std::to_string(run.device.index()) + ")");
  }
  at::manual_seed(o.seed);
  run.model = models::SparseTransformer(run.config);
  if (resumed) {
    at::NoGradGuard no_grad;
    auto source = resumed->model->named_parameters();
    for (auto& item : run.model->named_parameters()) {
      // Only amplitude inputs or an expert added to a fine-tune are new: they keep their start (TrainOptions).
      if (const at::Tensor* from = source.find(item.key())) item.value().copy_(*from);
    }
  }
  // On the device before the optimiser takes the parameters, so its state lives there too.
  run.model->to(run.device);
  auto adam = torch::optim::AdamWOptions(o.learning_rate).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay);
  // Two groups: the weights, and the product of experts' two scalars (see kMixRateFactor).
  std::vector<at::Tensor> weights, mix;
  for (const auto& item : run.model->named_parameters()) {
    const bool is_mix = item.key() == "network_weight" || item.key() == "expert_weight";
    (is_mix ? mix : weights).push_back(item.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(weights, std::make_unique<torch::optim::AdamWOptions>(adam));
  if (!mix.empty()) {
    auto mix_options = adam;
    mix_options.lr(o.learning_rate * kMixRateFactor).weight_decay(0.0);
    groups.emplace_back(mix, std::make_unique<torch::optim::AdamWOptions>(mix_options));
  }
  run.optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups), adam);
  if (resumed && o.resume) load_optimizer_state(resumed->folder, run.model, *run.optimizer);
}

void load_data(Run& run, const EventSink& sink, const std::atomic<bool>& cancel) {
  DatasetOptions d = dataset_options_for(run.config);
  d.validation_fraction = run.options.validation_fraction;
  d.progress = [&cancel](size_t, size_t) { return !cancel.load(); };
  run.data = open_dataset(run.options.data, d);
  log(run, sink,
      "data " + run.options.data.string() + ": " + std::to_string(run.data.train.size()) + " training bytes (" +
          std::to_string(run.data.train_files.size()) + " files), " + std::to_string(run.data.validation.size()) +
          " validation bytes (" + std::to_string(run.data.validation_files.size()) + " files)");
  for (size_t i = 0; i < run.data.skipped.size() && i < 20; ++i) {
    log(run, sink, "skipped " + run.data.skipped[i].reason, LogLine::Level::warning);  // the reason names the file
  }
  if (run.data.skipped.size() > 20) {
    log(run, sink, std::to_string(run.data.skipped.size() - 20) + " more files skipped", LogLine::Level::warning);
  }
  for (const std::string& warning : run.data.warnings) log(run, sink, warning, LogLine::Level::warning);
}

// The last step of a run scores the whole validation split when it is at most this big, so that the figure
// a finished model carries is its held-out figure. Validations along the way score eval_windows windows,
// spread out, which can be far from it: 4 windows of the bundled audio model read 3.99 bits/byte, all 71
// read 5.91.
constexpr size_t kWholeFinalValidationBytes = size_t{16} << 20;

double validate_now(Run& run, const std::atomic<bool>& cancel, int64_t max_windows) {
  if (run.data.validation.empty()) return std::nan("");
  const EvaluationResult r = evaluate_bits_per_byte(run.model, run.data.validation, run.config.context,
                                                    static_cast<int64_t>(run.data.record_bytes), max_windows, 8,
                                                    &cancel);
  // A pass cut short by a cancel scored only some windows: not a validation, and never a "best".
  if (cancel.load()) return std::nan("");
  return r.bits_per_byte;
}

uint64_t folder_bytes(const fs::path& folder) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(folder, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MB"; }

// When a save fails and the disk of the run folder has less room than a checkpoint takes: how much a save
// needs, how much is free, and which checkpoints the user could delete (not the latest, not the best).
// Empty when there is room, or nothing to compare with.
std::string space_advice(const fs::path& out) {
  const RunFolder folder(out);
  const std::optional<fs::path> latest = folder.latest();
  std::error_code ec;
  const fs::space_info space = fs::space(out, ec);
  if (!latest || ec) return "";
  const uint64_t needed = folder_bytes(*latest);
  if (space.available >= needed) return "";
  const std::optional<fs::path> best = folder.best();
  std::vector<std::string> deletable;
  for (const auto& entry : fs::directory_iterator(out / "checkpoints", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || entry.path() == *latest || (best && entry.path() == *best)) continue;
    deletable.push_back(name);
  }
  std::sort(deletable.begin(), deletable.end());
  std::string advice = "; a checkpoint takes about " + megabytes(needed) + " and " + megabytes(space.available) +
                       " are free there";
  if (deletable.empty()) return advice + ": free space on that disk";
  advice += ": older checkpoints that can be deleted: ";
  for (size_t i = 0; i < deletable.size(); ++i) advice += (i > 0 ? ", " : "") + (out / "checkpoints" / deletable[i]).string();
  return advice;
}

// Saves a checkpoint (rank 0). When the save fails (disk full, a read-only folder, EIO), nothing saved before
// is touched and training pauses: the save is retried every save_retry_seconds until it succeeds, so a user
// who frees space loses nothing, or until the run is cancelled, which ends it at the last saved checkpoint.
std::optional<fs::path> save(Run& run, const EventSink& sink, double elapsed_before, const std::atomic<bool>& cancel) {
  if (!run.reporting) return std::nullopt;
  TrainState state = run.state;
  state.train_seconds = elapsed_before;
  const bool is_best = std::isfinite(state.last_bits_per_byte) && state.best_step == state.step;
  const std::string what = "checkpoint at step " + std::to_string(state.step);
  for (int attempt = 0;; ++attempt) {
    try {
      RunFolder folder(run.options.out);
      const fs::path saved = folder.commit(state.step, is_best, run.options.keep_last, [&](const fs::path& staging) {
        write_checkpoint_files(staging, run.config, run.recipe, run.sampling, run.model, &state, run.optimizer.get());
      });
      if (attempt > 0) log(run, sink, what + " saved after all; training goes on");
      emit(run, sink, CheckpointSaved{state.step, saved});
      return saved;
    } catch (const Error& e) {
      log(run, sink, what + " was not saved: " + e.what() + space_advice(run.options.out), LogLine::Level::error);
    }
    if (cancel.load()) return std::nullopt;
    if (attempt == 0) {
      char every[32];
      std::snprintf(every, sizeof every, "%g", run.options.save_retry_seconds);
      log(run, sink,
          "training paused: free some space or fix the folder, and the save is retried every " + std::string(every) +
              " s; stop the run to end it at the last saved checkpoint",
          LogLine::Level::warning);
    }
    const auto resume_at = Clock::now() + std::chrono::duration<double>(run.options.save_retry_seconds);
    while (Clock::now() < resume_at) {
      if (cancel.load()) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

void record_validation(Run& run, const EventSink& sink, double bits_per_byte) {
  if (!std::isfinite(bits_per_byte)) return;
  run.state.last_bits_per_byte = bits_per_byte;
  const bool best = bits_per_byte < run.state.best_bits_per_byte;
  if (best) {
    run.state.best_bits_per_byte = bits_per_byte;
    run.state.best_step = run.state.step;
  }
  emit(run, sink, ValidationDone{run.state.step, bits_per_byte, best});
}

// A micro-batch of crops for a model with the linear-prediction expert or training noise: the clean crops
// (the targets), what the network reads (the crops, noisy on a share of them), and the expert's inputs
// from the same noisy bytes, after a past long enough for its first fit in the crop to see a whole window.
struct CropBatch {
  at::Tensor targets, inputs;  // [B, window] bytes
  models::ExpertInputs expert;
};

CropBatch draw_crops(const Run& run, const CropSampler& crops, int64_t first_index, int64_t count) {
  const TrainOptions& o = run.options;
  const models::LinearExpertConfig& expert = run.config.expert;
  const int64_t window = run.window;
  const size_t past = expert.enabled() ? static_cast<size_t>(expert.window + expert.order + 2 * expert.refit_interval) : 0;
  CropBatch batch;
  batch.targets = at::empty({count, window}, at::kByte);
  batch.inputs = at::empty({count, window}, at::kByte);
  std::vector<models::ExpertInputs> rows(static_cast<size_t>(count));
  at::parallel_for(0, count, 1, [&](int64_t b0, int64_t b1) {
    std::vector<uint8_t> bytes(past + static_cast<size_t>(window));
    for (int64_t b = b0; b < b1; ++b) {
      const auto index = static_cast<uint64_t>(first_index + b);
      const size_t before = crops.copy_with_past(index, past, bytes.data());
      std::memcpy(batch.targets[b].data_ptr<uint8_t>(), bytes.data() + before, static_cast<size_t>(window));
      if (crop_is_noisy(run.state.seed, index, o.noise_share)) {
        add_crop_noise(run.state.seed, index, static_cast<int>(o.noise_steps), bytes.data(), before + window);
      }
      std::memcpy(batch.inputs[b].data_ptr<uint8_t>(), bytes.data() + before, static_cast<size_t>(window));
      if (expert.enabled()) {
        const at::Tensor row = at::from_blob(bytes.data(), {1, static_cast<int64_t>(before) + window}, at::kByte);
        rows[static_cast<size_t>(b)] = models::linear_expert_inputs(expert, row, static_cast<int64_t>(before));
      }
    }
  });
  if (expert.enabled()) {
    std::vector<at::Tensor> log_probs, predicted, features;
    for (const models::ExpertInputs& r : rows) {
      log_probs.push_back(r.log_probs);
      predicted.push_back(r.predicted);
      features.push_back(r.scale_feature);
    }
    batch.expert = models::ExpertInputs{at::cat(log_probs, 0), at::cat(predicted, 0), at::cat(features, 0)};
  }
  return batch;
}

// One optimiser step over the global batch. Returns false when cancelled part-way (the step is dropped).
bool train_step(Run& run, const CropSampler& crops, const std::atomic<bool>& cancel, double& loss_bits) {
  const TrainOptions& o = run.options;
  const int world = run.parallel ? run.parallel->world_size() : 1;
  const int rank = run.parallel ? run.parallel->rank() : 0;
  const int64_t micro_batch = o.batch / o.accumulation;  // over all processes
  const int64_t local_batch = micro_batch / world;
  const int64_t context = run.window;
  run.optimizer->zero_grad();
  double local_nats = 0;
  at::Tensor bytes = at::empty({local_batch, context}, at::kByte);
  for (int64_t micro = 0; micro < o.accumulation; ++micro) {
    if (cancel.load() && !run.parallel) {
      run.optimizer->zero_grad();
      return false;
    }
    const int64_t first_index = run.state.samples_drawn + micro * micro_batch + rank * local_batch;
    at::Tensor logits, targets;
    if (run.config.expert.enabled() || (o.noise_share > 0 && o.noise_steps > 0)) {
      const CropBatch batch = draw_crops(run, crops, first_index, local_batch);
      targets = batch.targets.to(run.device).to(at::kLong);
      const at::Tensor inputs = batch.inputs.to(run.device).to(at::kLong);
      logits = run.config.expert.enabled() ? run.model->forward(inputs, batch.expert) : run.model->forward(inputs);
    } else {
      for (int64_t b = 0; b < local_batch; ++b) {
        crops.copy(static_cast<uint64_t>(first_index + b), bytes[b].data_ptr<uint8_t>());
      }
      targets = bytes.to(run.device).to(at::kLong);
      logits = run.model->forward(targets);
    }
    const at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, 256}), targets.reshape({-1}));
    // Each micro-batch of each process weighs 1 / (accumulation * world) of the global mean.
    (loss / static_cast<double>(o.accumulation)).backward();
    local_nats += loss.item<double>() * static_cast<double>(local_batch * context);
  }
  std::vector<at::Tensor> params = run.model->parameters();
  double nats = local_nats;
  if (run.parallel) {
    run.parallel->average_gradients(params);
    nats = run.parallel->sum({local_nats})[0];
  }
  if (o.clip_norm > 0) torch::nn::utils::clip_grad_norm_(params, o.clip_norm);
  const double lr = learning_rate_at(o, run.state.step);
  auto& groups = run.optimizer->param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    static_cast<torch::optim::AdamWOptions&>(groups[g].options()).lr(g == 0 ? lr : lr * kMixRateFactor);
  }
  run.optimizer->step();
  run.state.step += 1;
  run.state.samples_drawn += o.batch;
  loss_bits = nats / static_cast<double>(o.batch * context) / std::log(2.0);
  return true;
}

// Everyone stops together: the processes agree on whether any was asked to stop.
bool agreed_cancel(Run& run, const std::atomic<bool>& cancel) {
  if (!run.parallel) return cancel.load();
  return run.parallel->sum({cancel.load() ? 1.0 : 0.0})[0] > 0;
}

JobEnded run_training(Run& run, const EventSink& sink, const std::atomic<bool>& cancel) {
  const TrainOptions& o = run.options;
  const int threads_before = at::get_num_threads();
  if (o.deterministic) at::set_num_threads(1);
  struct RestoreThreads {
    int n;
    ~RestoreThreads() { at::set_num_threads(n); }
  } restore{threads_before};

  load_data(run, sink, cancel);
  if (cancel.load()) return JobEnded{JobEnded::Outcome::cancelled, "cancelled while reading the data", {}, {}};
  const CropSampler crops(run.data.train, static_cast<size_t>(run.window), run.data.record_bytes,
                          run.state.seed);
  if (run.parallel) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> weights;
    for (const at::Tensor& p : run.model->parameters()) weights.push_back(p.detach());
    run.parallel->broadcast(weights);
  }
  log(run, sink,
      "model " + run.config.name + ": " + std::to_string(run.model->parameter_count()) +
          " parameters, context " + std::to_string(run.config.context) + ", " +
          kernels::to_string(run.config.pattern) + " attention" +
          (run.window < run.config.context ? ", training windows of " + std::to_string(run.window) + " bytes"
                                           : ""));

  run.model->train();
  const auto start = Clock::now();
  const double seconds_before = run.state.train_seconds;
  RateMeter meter;
  std::optional<fs::path> last_saved;
  const int64_t first_step = run.state.step;
  bool cancelled = false;
  while (run.state.step < o.steps) {
    if (agreed_cancel(run, cancel)) {
      cancelled = true;
      break;
    }
    const auto step_start = Clock::now();
    double loss_bits = 0;
    if (!train_step(run, crops, cancel, loss_bits)) {
      cancelled = true;
      break;
    }
    if (!std::isfinite(loss_bits)) {
      throw Error("the loss became " + std::to_string(loss_bits) + " at step " + std::to_string(run.state.step) +
                  ": try a lower learning rate", {"learning_rate"});
    }
    meter.add(seconds_since(step_start), static_cast<double>(o.batch * run.window));
    TrainProgress progress;
    progress.step = run.state.step;
    progress.total_steps = o.steps;
    progress.loss_bits_per_byte = loss_bits;
    progress.learning_rate = learning_rate_at(o, run.state.step - 1);
    progress.tokens_per_second = meter.tokens_per_second();
    progress.elapsed_seconds = seconds_since(start);
    progress.eta_seconds = meter.seconds_per_step() * static_cast<double>(o.steps - run.state.step);
    emit(run, sink, progress);

    const bool checkpoint_due = run.state.step % o.checkpoint_every == 0 || run.state.step == o.steps;
    const bool eval_due = (o.eval_every > 0 && run.state.step % o.eval_every == 0) || checkpoint_due;
    if (eval_due) {
      int64_t windows = o.eval_windows;
      if (run.state.step == o.steps && windows != 0 && run.data.validation.size() <= kWholeFinalValidationBytes) {
        windows = 0;
        log(run, sink, "final validation over the whole validation split (" +
                           std::to_string(run.data.validation.size()) + " bytes)");
      }
      record_validation(run, sink, validate_now(run, cancel, windows));
    }
    if (checkpoint_due) {
      if (auto saved = save(run, sink, seconds_before + seconds_since(start), cancel)) last_saved = saved;
    }
  }
  const double total_seconds = seconds_before + seconds_since(start);
  if (cancelled) {
    // The final checkpoint of a cancelled run, unless the last step was just saved.
    if (!last_saved || last_saved->filename() != RunFolder(o.out).folder_for(run.state.step).filename()) {
      if (auto saved = save(run, sink, total_seconds, cancel)) {
        last_saved = saved;
      } else if (run.reporting) {
        // Stopped, but not "stopped after saving": say what was lost and what is still there.
        const std::optional<fs::path> latest = RunFolder(o.out).latest();
        return JobEnded{JobEnded::Outcome::failed,
                        "stopped at step " + std::to_string(run.state.step) +
                            ", which could not be saved (see the errors above); " +
                            (latest ? "the last saved checkpoint is " + latest->string()
                                    : std::string("no checkpoint of this run was saved")),
                        latest.value_or(fs::path()), {}};
      }
    }
    return JobEnded{JobEnded::Outcome::cancelled, "stopped at step " + std::to_string(run.state.step),
                    last_saved.value_or(fs::path()), {}};
  }
  if (run.state.step == first_step) {  // resumed at its last step already: nothing to do, nothing to save
    return JobEnded{JobEnded::Outcome::completed, "already at step " + std::to_string(run.state.step),
                    RunFolder(o.out).latest().value_or(fs::path()), {}};
  }
  if (run.reporting && (!last_saved || last_saved->filename() != RunFolder(o.out).folder_for(run.state.step).filename())) {
    return JobEnded{JobEnded::Outcome::failed, "training finished but the final checkpoint could not be saved",
                    last_saved.value_or(fs::path()), {}};
  }
  return JobEnded{JobEnded::Outcome::completed,
                  "finished " + std::to_string(run.state.step) + " steps in " +
                      std::to_string(std::lround(seconds_since(start))) + " s",
                  last_saved.value_or(fs::path()), {}};
}

}  // namespace

JobEnded train(TrainOptions options, const EventSink& sink, const std::atomic<bool>& cancel) {
  Run run;
  run.options = std::move(options);
  run.reporting = run.options.distributed.rank == 0;
  JobEnded end;
  try {
    prepare(run, sink);
    reuse_freed_memory(!run.config.recompute);
    if (run.options.distributed.world_size > 1) {
      run.parallel = std::make_unique<DataParallel>(run.options.distributed, run.device);
      log(run, sink,
          "data-parallel over " + std::to_string(run.parallel->world_size()) + " processes through " +
              run.parallel->backend());
    }
    end = run_training(run, sink, cancel);
  } catch (const std::bad_alloc&) {
    end = failed_run("out of memory: try a smaller batch, a shorter context, or a config with recompute: true",
                     {"batch", "context"});
  } catch (const c10::Error& e) {
    const std::string text = e.what_without_backtrace();
    if (text.find("alloc") != std::string::npos) {
      end = failed_run(out_of_memory_message(text.substr(0, text.find('\n'))), {"batch", "context"});
    } else {
      end = failed_run("LibTorch: " + text.substr(0, text.find('\n')), {});
    }
  } catch (...) {
    try {
      rethrow_as_error();
    } catch (const Error& e) {
      end = failed_run(e.what(), e.settings());
    }
  }
  if (sink) sink(end);
  return end;
}

}  // namespace stx::engine
