#include "stx/engine/model_session.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"
#include "stx/engine/io/safetensors.h"
#include "stx/engine/sampler.h"
#include "stx/kernels/pattern.h"
#include "stx/models/token_decoder.h"

namespace fs = std::filesystem;

namespace stx::engine {

namespace {

constexpr uint64_t kMaxCardBytes = 256u << 10;
constexpr uint64_t kMaxHeldOutBytes = 64u << 10;

std::string read_card(const fs::path& folder) {
  const fs::path file = folder / "MODEL_CARD.md";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return {};
  const std::vector<uint8_t> bytes = read_file(file, kMaxCardBytes);
  return std::string(bytes.begin(), bytes.end());
}

ModelSummary summarize(const fs::path& folder, const CheckpointInfo& info, int64_t parameters) {
  const models::ModelConfig& c = info.config;
  ModelSummary s;
  s.folder = folder;
  s.name = c.name;
  s.kind = models::to_string(c.kind);
  s.context = c.context;
  s.layers = c.layers;
  s.heads = c.heads;
  s.d_model = c.d_model;
  s.d_ff = c.d_ff;
  s.pattern = kernels::to_string(c.pattern);
  s.mode = kernels::to_string(c.mode);
  s.stride = c.stride;
  s.summary = c.summary;
  s.image_height = c.image_height;
  s.image_width = c.image_width;
  s.image_channels = c.image_channels;
  s.parameters = parameters;
  s.sampling = info.sampling;
  if (info.state) {
    s.steps_trained = info.state->step;
    // The latest validation is the one of these weights (every checkpoint validates first); the best may be
    // another checkpoint's.
    if (std::isfinite(info.state->last_bits_per_byte)) s.bits_per_byte = info.state->last_bits_per_byte;
  }
  if (info.training.is_object()) {
    const auto steps = info.training.find("steps");
    if (steps != info.training.end() && steps->is_number_integer()) s.steps_planned = steps->get<int64_t>();
    const auto batch = info.training.find("batch");
    if (batch != info.training.end() && batch->is_number_integer() && batch->get<int64_t>() > 0) {
      s.batch_trained = batch->get<int64_t>();
    }
  }
  if (const std::optional<double> held_out = read_held_out_bits_per_byte(folder)) {
    s.bits_per_byte = held_out;
    s.bits_per_byte_held_out = true;
  }
  s.card = read_card(folder);
  return s;
}

}  // namespace

std::optional<double> read_held_out_bits_per_byte(const fs::path& folder) {
  const fs::path file = folder / "held_out.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  const std::vector<uint8_t> bytes = read_file(file, kMaxHeldOutBytes);
  const nlohmann::json json = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (json.is_discarded()) throw Error(file.string() + ": not valid JSON");
  const auto bits = json.is_object() ? json.find("bits_per_byte") : json.end();
  const double value = bits != json.end() && bits->is_number() ? bits->get<double>() : -1.0;
  if (!std::isfinite(value) || value < 0.0)
    throw Error(file.string() + ": expected an object with a non-negative number \"bits_per_byte\"");
  return value;
}

ModelSummary describe_model(const fs::path& path) {
  const fs::path folder = resolve_checkpoint(path);
  const CheckpointInfo info = read_checkpoint_info(folder);
  const SafetensorsFile weights = SafetensorsFile::open(folder / "model.safetensors");
  int64_t parameters = 0;
  for (const TensorInfo& tensor : weights.tensors()) parameters += static_cast<int64_t>(tensor.numel());
  return summarize(folder, info, parameters);
}

struct LoadedModel::Impl {
  ModelBundle bundle;
  ModelSummary summary;
};

LoadedModel LoadedModel::open(const fs::path& path) {
  LoadedModel model;
  model.impl_ = std::make_shared<Impl>();
  const fs::path folder = resolve_checkpoint(path);
  model.impl_->bundle = load_checkpoint(folder);
  const ModelBundle& b = model.impl_->bundle;
  model.impl_->summary = summarize(folder, CheckpointInfo{b.config, b.training, b.state, b.sampling}, b.model->parameter_count());
  model.impl_->summary.weights_hash = b.weights_hash;
  model.impl_->bundle.model->eval();
  return model;
}

const ModelSummary& LoadedModel::summary() const { return impl_->summary; }
const std::string& LoadedModel::weights_hash() const { return impl_->bundle.weights_hash; }
std::string LoadedModel::device() const { return "CPU"; }  // the incremental decoder runs on the CPU

SampleResult LoadedModel::sample(const SampleRequest& request, const EventSink& sink,
                                 const std::atomic<bool>* cancel) {
  return engine::sample(impl_->bundle.model, request, sink, cancel);
}

SampleResult LoadedModel::regenerate(const std::vector<uint8_t>& previous, int64_t keep,
                                     const SampleRequest& request, const EventSink& sink,
                                     const std::atomic<bool>* cancel) {
  return engine::regenerate(impl_->bundle.model, previous, keep, request, sink, cancel);
}

namespace {

void check_head(const models::ModelConfig& config, int layer, int head) {
  if (layer < 0 || layer >= config.layers || head < 0 || head >= config.heads) {
    throw Error("the model has " + std::to_string(config.layers) + " layers of " + std::to_string(config.heads) +
                " heads; layer " + std::to_string(layer) + " head " + std::to_string(head) + " does not exist");
  }
}

}  // namespace

AttentionProbe LoadedModel::inspect(const std::vector<uint8_t>& bytes, int layer, int head, int64_t position) const {
  const models::ModelConfig& config = impl_->bundle.config;
  check_head(config, layer, head);
  if (position < 0 || position >= static_cast<int64_t>(bytes.size()) || position >= config.context) {
    throw Error("position " + std::to_string(position) + " is outside the sample (" + std::to_string(bytes.size()) +
                " bytes)");
  }
  // Byte i is predicted at step i from the bytes before it (step 0 reads the start token), so the attention
  // behind byte `position` is that of step `position`.
  // make_decoder: a model with the linear-prediction expert needs its inputs at every position too.
  const std::unique_ptr<models::TokenDecoder> decoder =
      models::make_decoder(impl_->bundle.model, 1, position + 1, kernels::DType::f32, at::Device(at::kCPU));
  decoder->set_probe(layer, head);
  // No logits are wanted: the positions are read as a prefix, many per call, and the probe records the
  // last one's attention.
  std::vector<int32_t> inputs(static_cast<size_t>(position + 1));
  for (int64_t i = 0; i <= position; ++i)
    inputs[static_cast<size_t>(i)] = i == 0 ? 256 : bytes[static_cast<size_t>(i - 1)];
  constexpr int64_t kChunk = 256;  // rows per call: the decoder's scratch grows with them
  for (int64_t i = 0; i <= position; i += kChunk) {
    decoder->step_common_prefix(inputs.data() + i, std::min(kChunk, position + 1 - i));
  }
  AttentionProbe probe;
  probe.layer = layer;
  probe.head = head;
  probe.position = position;
  decoder->probe(0, probe.positions, probe.weights);
  return probe;
}

std::vector<int64_t> LoadedModel::pattern_positions(int layer, int head, int64_t position) const {
  const models::ModelConfig& config = impl_->bundle.config;
  check_head(config, layer, head);
  if (position < 0 || position >= config.context) {
    throw Error("position " + std::to_string(position) + " is outside the context of " + std::to_string(config.context));
  }
  return kernels::attended_set(config.layer_patterns(layer)[static_cast<size_t>(head)], position);
}

}  // namespace stx::engine
