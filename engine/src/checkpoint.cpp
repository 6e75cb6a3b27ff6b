// Checkpoint folders: writing them (weights, optimiser, random state) and reading them back with every
// check that an untrusted file deserves.
#include "stx/engine/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/adamw.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <type_traits>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/bundled_models.h"
#include "stx/engine/error.h"
#include "stx/engine/io/safetensors.h"
#include "stx/engine/trainer.h"
#include "stx/engine/training_memory.h"

namespace stx::engine {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxJsonBytes = 4u << 20;
constexpr const char* kFormat = "stx-checkpoint-1";

nlohmann::json read_json(const fs::path& file) {
  const std::vector<uint8_t> bytes = read_file(file, kMaxJsonBytes);
  nlohmann::json json = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw Error(file.string() + ": not valid JSON");
  if (!json.is_object()) throw Error(file.string() + ": expected a JSON object");
  return json;
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

constexpr uint64_t kFnvOffset = 1469598103934665603ull;

// FNV-1a 64 of `data`, continuing from `hash` (so that a file can be hashed chunk by chunk).
uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t hash = kFnvOffset) {
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  return hash;
}

// The optimiser's state map is keyed by a string in LibTorch 1.13 and by the TensorImpl pointer in 2.x.
template <class Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // what 1.13's c10::guts::to_string (gone in 2.x) made of the pointer
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

std::vector<int64_t> shape_of(const at::Tensor& t) { return t.sizes().vec(); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// A CPU float tensor made from a safetensors entry (F32, F16 or BF16), after the finiteness check.
at::Tensor float_tensor(const SafetensorsFile& file, const TensorInfo& info) {
  file.check_finite(info);
  at::ScalarType type;
  switch (info.dtype) {
    case DType::F32: type = at::kFloat; break;
    case DType::F16: type = at::kHalf; break;
    case DType::BF16: type = at::kBFloat16; break;
    default:
      throw Error(file.source_name() + ": tensor '" + info.name + "' has dtype " +
                  std::string(dtype_name(info.dtype)) + "; weights must be F32, F16 or BF16");
  }
  const at::Tensor view = at::from_blob(const_cast<uint8_t*>(file.data(info)), info.shape, at::TensorOptions(type));
  return view.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
}

TrainState state_from_json(const nlohmann::json& j, const fs::path& file) {
  // Each field by name, so a bad one is named in the message rather than by a JSON library code.
  const auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key)) throw Error(file.string() + ": '" + key + "' is missing");
    return j[key];
  };
  const auto whole = [&](const char* key) -> int64_t {
    const nlohmann::json& v = field(key);
    if (!v.is_number_integer()) throw Error(file.string() + ": '" + key + "' must be a whole number, got " + v.dump());
    return v.get<int64_t>();
  };
  const auto number_or_null = [&](const char* key, double if_null) -> double {
    const nlohmann::json& v = field(key);
    if (v.is_null()) return if_null;
    if (!v.is_number()) throw Error(file.string() + ": '" + key + "' must be a number or null, got " + v.dump());
    return v.get<double>();
  };
  TrainState s;
  s.step = whole("step");
  s.samples_drawn = whole("samples_drawn");
  const nlohmann::json& seed = field("seed");
  if (!seed.is_number_unsigned()) {
    throw Error(file.string() + ": 'seed' must be a whole number from 0 to 2^64-1, got " + seed.dump());
  }
  s.seed = seed.get<uint64_t>();
  s.best_bits_per_byte = number_or_null("best_bits_per_byte", std::numeric_limits<double>::infinity());
  s.best_step = whole("best_step");
  s.last_bits_per_byte = number_or_null("last_bits_per_byte", std::nan(""));
  s.train_seconds = number_or_null("train_seconds", 0.0);
  s.world_size = j.contains("world_size") ? whole("world_size") : 1;
  if (s.step < 0 || s.samples_drawn < 0) throw Error(file.string() + ": negative step or data position");
  return s;
}

nlohmann::json state_to_json(const TrainState& s) {
  auto finite_or_null = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  return {{"step", s.step},
          {"samples_drawn", s.samples_drawn},
          {"seed", s.seed},
          {"best_bits_per_byte", finite_or_null(s.best_bits_per_byte)},
          {"best_step", s.best_step},
          {"last_bits_per_byte", finite_or_null(s.last_bits_per_byte)},
          {"train_seconds", s.train_seconds},
          {"world_size", s.world_size}};
}

}  // namespace

fs::path resolve_checkpoint(const fs::path& path, bool prefer_best) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // A bare name that is not a folder here names a bundled model: --model image.
    if (const auto bundled = find_bundled_model(path.string())) return *bundled;
    std::string known;
    for (const std::string& name : bundled_model_names()) known += (known.empty() ? "" : ", ") + name;
    throw Error(path.string() + ": no such folder, and no bundled model of that name (bundled: " +
                (known.empty() ? std::string("none found") : known) + ")");
  }
  if (!fs::is_directory(path, ec)) throw Error(path.string() + ": not a folder (expected a model or run folder)");
  if (fs::exists(path / "config.json", ec)) return path;
  RunFolder run(path);
  const auto chosen = prefer_best ? run.best() : run.latest();
  if (chosen) return *chosen;
  // A folder we may not search looks empty above: say why instead. (One we may search but not list, mode
  // 0711, still works when its files are there.)
  if (::access(path.c_str(), X_OK) != 0) {
    const int error = errno;
    throw Error(path.string() + ": cannot read the folder: " + std::strerror(error));
  }
  throw Error(path.string() + ": not a model folder (no config.json) and not a run folder (no latest.json)");
}

CheckpointInfo read_checkpoint_info(const fs::path& folder) {
  CheckpointInfo info;
  const fs::path config_file = folder / "config.json";
  const nlohmann::json config_json = read_json(config_file);
  // A folder from a later version may mean something else by the same fields: refuse it by name.
  if (config_json.is_object() && config_json.contains("format") && config_json["format"] != kFormat) {
    throw Error(config_file.string() + ": format " + config_json["format"].dump() + " is not one this stx reads (" +
                kFormat + ")");
  }
  try {
    info.config = models::model_config_from_json(config_json);
  } catch (const models::ConfigError& e) {
    throw Error(config_file.string() + ": " + e.what());
  }
  info.training = config_json.value("training", nlohmann::json::object());
  try {
    info.sampling = sampling_from_json(config_json.value("sampling", nlohmann::json()));
  } catch (const Error& e) {
    throw Error(config_file.string() + ": " + e.what());
  }
  try {  // the recipe's types, checked before anything reads or prints a field of it
    TrainOptions recipe;
    recipe_from_json(info.training, recipe);
  } catch (const Error& e) {
    throw Error(config_file.string() + ": " + e.what());
  }
  const fs::path state_file = folder / "train_state.json";
  std::error_code ec;
  if (fs::exists(state_file, ec)) info.state = state_from_json(read_json(state_file), state_file);
  return info;
}

void check_model_fits(const fs::path& folder, const models::ModelConfig& config) {
  const fs::path config_file = folder / "config.json", weights_file = folder / "model.safetensors";
  const int64_t parameters = config.parameter_count();
  const uint64_t in_memory = static_cast<uint64_t>(parameters) * sizeof(float);
  const auto gb = [](uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
    return std::string(text);
  };
  // The weights file holds every parameter, at least as a half: a smaller one cannot be this model's.
  std::error_code ec;
  const uint64_t file_bytes = fs::file_size(weights_file, ec);
  if (!ec && file_bytes < static_cast<uint64_t>(parameters) * 2) {
    throw Error(config_file.string() + ": describes a model of " + std::to_string(parameters) +
                " parameters, but " + weights_file.string() + " holds only " + std::to_string(file_bytes) +
                " bytes (at least " + std::to_string(static_cast<uint64_t>(parameters) * 2) +
                " needed); nothing was loaded");
  }
  const uint64_t available = available_memory_bytes();
  if (available > 0 && in_memory > available) {
    throw Error(config_file.string() + ": describes a model of " + std::to_string(parameters) + " parameters, " +
                gb(in_memory) + " in memory, more than the " + gb(available) +
                " this machine has available; nothing was loaded");
  }
}

ModelBundle load_checkpoint(const fs::path& folder) {
  ModelBundle bundle;
  bundle.folder = folder;
  CheckpointInfo info = read_checkpoint_info(folder);
  check_model_fits(folder, info.config);  // before anything of the model's size is allocated
  bundle.config = info.config;
  bundle.training = std::move(info.training);
  bundle.state = info.state;
  bundle.sampling = info.sampling;
  bundle.model = models::SparseTransformer(bundle.config);

  const fs::path weights_file = folder / "model.safetensors";
  const SafetensorsFile weights = SafetensorsFile::open(weights_file);
  std::map<std::string, const TensorInfo*> unused;
  for (const TensorInfo& info : weights.tensors()) unused[info.name] = &info;
  at::NoGradGuard no_grad;
  for (const auto& item : bundle.model->named_parameters()) {
    const TensorInfo* info = weights.find(item.key());
    if (!info) {
      throw Error(weights_file.string() + ": tensor '" + item.key() + "' is missing (config.json describes a " +
                  "different model)");
    }
    if (info->shape != shape_of(item.value())) {
      throw Error(weights_file.string() + ": tensor '" + item.key() + "' has shape " + shape_text(info->shape) +
                  " but config.json needs " + shape_text(shape_of(item.value())));
    }
    item.value().copy_(float_tensor(weights, *info));
    unused.erase(item.key());
  }
  if (!unused.empty()) {
    throw Error(weights_file.string() + ": unexpected tensor '" + unused.begin()->first +
                "' (config.json describes a different model)");
  }
  bundle.weights_hash = weights_hash_of(folder);
  return bundle;
}

std::string weights_hash_of(const fs::path& folder) {
  const fs::path file = folder / "model.safetensors";
  const RegularFile weights = open_regular_file(file);
  uint64_t hash = kFnvOffset;
  std::vector<uint8_t> chunk(1 << 20);
  for (size_t got; (got = std::fread(chunk.data(), 1, chunk.size(), weights.stream.get())) > 0;) {
    hash = fnv1a64(chunk.data(), got, hash);
  }
  if (std::ferror(weights.stream.get())) throw Error(file.string() + ": read error (" + std::strerror(errno) + ")");
  return hex64(hash);
}

void load_optimizer_state(const fs::path& folder, models::SparseTransformer& model, torch::optim::AdamW& optimizer) {
  const fs::path file = folder / "train_state.safetensors";
  const SafetensorsFile state = SafetensorsFile::open(file);
  auto& map = optimizer.state();
  for (const auto& item : model->named_parameters()) {
    const TensorInfo* avg = state.find("adamw." + item.key() + ".exp_avg");
    const TensorInfo* avg_sq = state.find("adamw." + item.key() + ".exp_avg_sq");
    const TensorInfo* step = state.find("adamw." + item.key() + ".step");
    if (!avg || !avg_sq || !step) throw Error(file.string() + ": no optimiser state for '" + item.key() + "'");
    if (avg->shape != shape_of(item.value()) || avg_sq->shape != shape_of(item.value())) {
      throw Error(file.string() + ": optimiser state of '" + item.key() + "' has the wrong shape");
    }
    if (step->dtype != DType::I64 || step->numel() != 1) {
      throw Error(file.string() + ": '" + step->name + "' must be one I64");
    }
    int64_t steps = 0;
    std::memcpy(&steps, state.data(*step), sizeof steps);
    auto param_state = std::make_unique<torch::optim::AdamWParamState>();
    param_state->step(steps);
    param_state->exp_avg(float_tensor(state, *avg).to(item.value().device()));
    param_state->exp_avg_sq(float_tensor(state, *avg_sq).to(item.value().device()));
    map[state_key(map, item.value())] = std::move(param_state);
  }
  const TensorInfo* rng = state.find("rng.cpu");
  if (!rng || rng->dtype != DType::U8) throw Error(file.string() + ": no CPU random generator state");
  const at::Tensor rng_state = at::from_blob(const_cast<uint8_t*>(state.data(*rng)), rng->shape, at::kByte).clone();
  auto generator = at::detail::getDefaultCPUGenerator();
  try {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng_state);
  } catch (const c10::Error& e) {
    throw Error(file.string() + ": the random generator state is invalid (" + e.what_without_backtrace() + ")");
  }
}

void write_checkpoint_files(const fs::path& folder, const models::ModelConfig& config, const nlohmann::json& training,
                            const SamplingSettings& sampling, models::SparseTransformer& model,
                            const TrainState* state, const torch::optim::AdamW* optimizer, bool fp16_weights) {
  nlohmann::json config_json = models::to_json(config);
  config_json["format"] = kFormat;
  if (!training.is_null() && !training.empty()) config_json["training"] = training;
  const nlohmann::json sampling_json = sampling_to_json(sampling);
  if (!sampling_json.empty()) config_json["sampling"] = sampling_json;
  write_file_atomic(folder / "config.json", config_json.dump(2) + "\n");

  // Keeps the converted tensors alive until the file is encoded.
  std::vector<at::Tensor> keep;
  std::vector<TensorWrite> tensors;
  auto add = [&](const std::string& name, at::Tensor t, DType dtype) {
    t = t.detach().to(at::kCPU).contiguous();
    keep.push_back(t);
    tensors.push_back(TensorWrite{name, dtype, t.sizes().vec(), t.data_ptr(), static_cast<uint64_t>(t.nbytes())});
  };
  for (const auto& item : model->named_parameters()) {
    if (fp16_weights) {
      add(item.key(), item.value().to(at::kHalf), DType::F16);
    } else {
      add(item.key(), item.value().to(at::kFloat), DType::F32);
    }
  }
  std::map<std::string, std::string> metadata = {{"format", kFormat}, {"model", config.name}};
  write_safetensors(folder / "model.safetensors", tensors, metadata);
  if (!state) return;
  if (!optimizer) {  // an exported model: the record of its training, nothing to resume from
    write_file_atomic(folder / "train_state.json", state_to_json(*state).dump(2) + "\n");
    return;
  }

  tensors.clear();
  keep.clear();
  std::vector<int64_t> steps;  // stable storage for the I64 scalars
  const auto named = model->named_parameters();
  steps.reserve(named.size());
  const auto& map = optimizer->state();
  for (const auto& item : named) {
    const auto it = map.find(state_key(map, item.value()));
    if (it == map.end()) {  // no step taken yet: zero moments
      add("adamw." + item.key() + ".exp_avg", at::zeros_like(item.value()), DType::F32);
      add("adamw." + item.key() + ".exp_avg_sq", at::zeros_like(item.value()), DType::F32);
      steps.push_back(0);
    } else {
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      add("adamw." + item.key() + ".exp_avg", s.exp_avg(), DType::F32);
      add("adamw." + item.key() + ".exp_avg_sq", s.exp_avg_sq(), DType::F32);
      steps.push_back(s.step());
    }
    tensors.push_back(TensorWrite{"adamw." + item.key() + ".step", DType::I64, {}, &steps.back(), sizeof(int64_t)});
  }
  at::Tensor rng_state;
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng_state = generator.get_state();
  }
  add("rng.cpu", rng_state, DType::U8);
  write_safetensors(folder / "train_state.safetensors", tensors, {{"format", kFormat}});
  nlohmann::json state_json = state_to_json(*state);
  write_file_atomic(folder / "train_state.json", state_json.dump(2) + "\n");
}

}  // namespace stx::engine
