// The training recipe: range checks, its JSON form in config.json, and the learning-rate schedule.
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "stx/engine/error.h"
#include "stx/engine/trainer.h"

namespace stx::engine {

namespace {

// `settings`: the TrainOptions fields the message is about (Error::settings).
void require(bool ok, const std::string& message, std::vector<std::string> settings = {}) {
  if (!ok) throw Error(message, std::move(settings));
}

// A field of the recipe, when present, checked for its type first: "training.steps: must be a whole number".
template <class T>
void read(const nlohmann::json& json, const char* key, T& value) {
  const auto it = json.find(key);
  if (it == json.end()) return;
  const char* wanted = nullptr;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) wanted = "a string";
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) wanted = "true or false";
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!it->is_number_unsigned()) wanted = "a whole number, 0 or more";
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) wanted = "a whole number";
  } else {
    if (!it->is_number()) wanted = "a number";
  }
  if (wanted != nullptr) {
    throw Error(std::string("training.") + key + ": must be " + wanted + ", not " + it->dump());
  }
  value = it->get<T>();
}

}  // namespace

void TrainOptions::validate() const {
  require(!(resume && init_from),
          "a run cannot both resume and start from another checkpoint: a resumed run keeps its own weights",
          {"resume", "init_from"});
  require(!(resume && precision),
          "the precision cannot change when resuming: a resumed run keeps its checkpoint's", {"precision"});
  require(!(resume && amplitude_taps),
          "the amplitude inputs cannot change when resuming: a resumed run keeps its checkpoint's model",
          {"amplitude_taps"});
  // The ranges are the model config's (ModelConfig::validate owns them); said here before a run starts.
  using models::ModelConfig;
  require(!amplitude_taps || (*amplitude_taps >= 0 && *amplitude_taps <= ModelConfig::kMaxAmplitudeTaps),
          "the amplitude inputs must be in [0, " + std::to_string(ModelConfig::kMaxAmplitudeTaps) + "] samples",
          {"amplitude_taps"});
  require(!(resume && expert_order),
          "the linear-prediction expert cannot change when resuming: a resumed run keeps its checkpoint's model",
          {"expert_order"});
  require(!expert_order || (*expert_order >= 1 && *expert_order <= ModelConfig::kMaxExpertOrder),
          "the expert's order must be in [1, " + std::to_string(ModelConfig::kMaxExpertOrder) + "]",
          {"expert_order"});
  require(noise_share >= 0 && noise_share <= 1, "the share of noisy crops must be in [0, 1]", {"noise_share"});
  require(noise_steps >= 0 && noise_steps <= 64, "the noise must be in [0, 64] mu-law steps", {"noise_steps"});
  require(save_retry_seconds >= 0.001 && save_retry_seconds <= 86400, "save retry interval must be in [0.001, 86400] s");
  require(steps >= 1 && steps <= 100'000'000, "the number of steps must be in [1, 100000000]", {"steps"});
  require(batch >= 1 && batch <= 65536, "the batch size must be in [1, 65536]", {"batch"});
  require(window >= 0 && window <= (int64_t{1} << 22), "the training window must be in [0, 4194304]", {"window"});
  require(accumulation >= 1 && batch % accumulation == 0,
          "the gradient accumulation must divide the batch size (" + std::to_string(batch) + ")",
          {"accumulation", "batch"});
  require(distributed.world_size >= 1 && (batch / accumulation) % distributed.world_size == 0,
          "the sequences per pass, batch / accumulation (" + std::to_string(batch / accumulation) +
              "), must be a multiple of the " + std::to_string(distributed.world_size) + " processes",
          {"batch", "accumulation"});
  require(learning_rate > 0 && learning_rate < 1, "the learning rate must be in (0, 1)", {"learning_rate"});
  require(min_learning_rate_ratio >= 0 && min_learning_rate_ratio <= 1, "min_learning_rate_ratio must be in [0, 1]");
  require(warmup_steps >= 0, "warmup_steps must be >= 0");
  require(weight_decay >= 0 && weight_decay < 1, "weight_decay must be in [0, 1)");
  require(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "beta1 and beta2 must be in [0, 1)");
  require(eval_every >= 0 && eval_windows >= 0, "eval_every and eval_windows must be >= 0");
  require(checkpoint_every >= 1, "checkpoints must be saved every 1 step or more", {"checkpoint_every"});
  require(keep_last >= 1, "at least 1 checkpoint must be kept", {"keep_last"});
  require(validation_fraction > 0 && validation_fraction < 1, "validation_fraction must be in (0, 1)");
}

nlohmann::json recipe_to_json(const TrainOptions& o) {
  return {{"data", o.data.string()},
          {"steps", o.steps},
          {"batch", o.batch},
          {"accumulation", o.accumulation},
          {"window", o.window},
          {"learning_rate", o.learning_rate},
          {"min_learning_rate_ratio", o.min_learning_rate_ratio},
          {"warmup_steps", o.warmup_steps},
          {"weight_decay", o.weight_decay},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"clip_norm", o.clip_norm},
          {"eval_every", o.eval_every},
          {"eval_windows", o.eval_windows},
          {"checkpoint_every", o.checkpoint_every},
          {"keep_last", o.keep_last},
          {"seed", o.seed},
          {"validation_fraction", o.validation_fraction},
          {"noise_share", o.noise_share},
          {"noise_steps", o.noise_steps}};
}

void recipe_from_json(const nlohmann::json& json, TrainOptions& o) {
  if (!json.is_object()) throw Error("training: must be a JSON object, not " + json.dump());
  std::string data = o.data.string();
  read(json, "data", data);
  o.data = data;
  read(json, "steps", o.steps);
  read(json, "batch", o.batch);
  read(json, "accumulation", o.accumulation);
  read(json, "window", o.window);
  read(json, "learning_rate", o.learning_rate);
  read(json, "min_learning_rate_ratio", o.min_learning_rate_ratio);
  read(json, "warmup_steps", o.warmup_steps);
  read(json, "weight_decay", o.weight_decay);
  read(json, "beta1", o.beta1);
  read(json, "beta2", o.beta2);
  read(json, "clip_norm", o.clip_norm);
  read(json, "eval_every", o.eval_every);
  read(json, "eval_windows", o.eval_windows);
  read(json, "checkpoint_every", o.checkpoint_every);
  read(json, "keep_last", o.keep_last);
  read(json, "seed", o.seed);
  read(json, "validation_fraction", o.validation_fraction);
  read(json, "noise_share", o.noise_share);
  read(json, "noise_steps", o.noise_steps);
}

double learning_rate_at(const TrainOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.learning_rate * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, o.steps - o.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup_steps) / static_cast<double>(decay_steps));
  const double floor = o.learning_rate * o.min_learning_rate_ratio;
  return floor + (o.learning_rate - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace stx::engine
