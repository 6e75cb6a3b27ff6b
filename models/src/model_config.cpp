#include "stx/models/model_config.h"

#include <nlohmann/json.hpp>
#include <type_traits>

#include "stx/kernels/error.h"

namespace stx::models {

DataKind parse_data_kind(const std::string& name) {
  if (const std::optional<DataKind> kind = data_kind_named(name)) return *kind;
  throw ConfigError("unknown data kind '" + name + "' (expected image, text or audio)");
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  if (name == "fp16") return Precision::fp16;
  throw ConfigError("unknown precision '" + name + "' (expected fp32, bf16 or fp16)");
}

int64_t ModelConfig::parameter_count() const {
  const int64_t d = d_model;
  int64_t total = 257 * d;  // token embedding: 256 bytes and the start token
  for (const int64_t size : position_axes()) total += size * d;
  const int64_t block = 2 * (2 * d)              // two layer norms
                        + (d * 3 * d + 3 * d)    // qkv
                        + (d * d + d)            // attention_out
                        + (d * d_ff + d_ff)      // ff_in
                        + (d_ff * d + d);        // ff_out
  total += layers * block;
  total += 2 * d + (d * 256 + 256);  // final norm, output
  total += amplitude_taps * d;       // the amplitude map, no bias
  if (expert.enabled()) total += 256 * d + d + 2;  // predicted-byte embedding, scale map, lambda and w
  return total;
}

std::vector<int64_t> ModelConfig::position_axes() const {
  if (kind == DataKind::image) return {image_height, image_width, image_channels};
  return {(context + stride - 1) / stride, stride};
}

std::vector<int64_t> ModelConfig::position_coordinates(int64_t i) const {
  if (kind == DataKind::image) {
    const int64_t row_bytes = image_width * image_channels;
    return {i / row_bytes, (i % row_bytes) / image_channels, i % image_channels};
  }
  return {i / stride, i % stride};
}

std::vector<kernels::HeadPattern> ModelConfig::layer_patterns(int layer) const {
  return kernels::layer_patterns(pattern, stride, summary, static_cast<int>(heads), mode, layer);
}

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

}  // namespace

void ModelConfig::validate() const {
  require(!name.empty(), "config: name is empty");
  require(context >= 1 && context <= (int64_t{1} << 22), "config: context must be in [1, 4194304]");
  if (kind == DataKind::image) {
    require(image_height >= 1 && image_width >= 1, "config: data.height and data.width must be >= 1");
    require(image_channels == 1 || image_channels == 3, "config: data.channels must be 1 or 3");
    require(image_height * image_width * image_channels == context,
            "config: an image model's context must equal height * width * channels (" +
                std::to_string(image_height * image_width * image_channels) + "), not " +
                std::to_string(context));
  }
  require(d_model >= 1 && d_model <= 8192, "config: d_model must be in [1, 8192]");
  require(layers >= 1 && layers <= 512, "config: layers must be in [1, 512]");
  require(heads >= 1 && d_model % heads == 0, "config: heads must divide d_model");
  require(head_dim() <= 256, "config: d_model / heads must be at most 256");
  require(d_ff >= 1 && d_ff <= 65536, "config: d_ff must be in [1, 65536]");
  require(stride >= 1 && stride <= context, "config: attention.stride must be in [1, context]");
  if (pattern == kernels::Pattern::fixed) {
    require(summary >= 1 && summary <= stride, "config: attention.summary must be in [1, stride]");
  }
  require(block == 16 || block == 32 || block == 64 || block == 128,
          "config: attention.block must be 16, 32, 64 or 128");
  require(dropout >= 0.0 && dropout < 1.0, "config: dropout must be in [0, 1)");
  require(amplitude_taps >= 0 && amplitude_taps <= kMaxAmplitudeTaps,
          "config: data.amplitude_taps must be in [0, " + std::to_string(kMaxAmplitudeTaps) + "]");
  require(amplitude_taps == 0 || kind == DataKind::audio, "config: data.amplitude_taps is for audio models only");
  require(expert.order >= 0 && expert.order <= kMaxExpertOrder,
          "config: expert.order must be in [0, " + std::to_string(kMaxExpertOrder) + "]");
  if (expert.enabled()) {
    require(kind == DataKind::audio, "config: the linear-prediction expert is for audio models only");
    require(expert.refit_interval >= 1 && expert.refit_interval <= 65536,
            "config: expert.refit_interval must be in [1, 65536]");
    require(expert.window > expert.order && expert.window <= (int64_t{1} << 20),
            "config: expert.window must be more than expert.order and at most 1048576");
    require(expert.ridge >= 0.0 && expert.ridge <= 1.0, "config: expert.ridge must be in [0, 1]");
    require(expert.scale_window >= 1 && expert.scale_window <= expert.refit_interval,
            "config: expert.scale_window must be in [1, expert.refit_interval]");
  }
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json data = {{"kind", to_string(c.kind)}};
  if (c.kind == DataKind::image) {
    data["height"] = c.image_height;
    data["width"] = c.image_width;
    data["channels"] = c.image_channels;
  }
  if (c.amplitude_taps > 0) data["amplitude_taps"] = c.amplitude_taps;
  nlohmann::json attention = {{"pattern", kernels::to_string(c.pattern)},
                              {"stride", c.stride},
                              {"mode", kernels::to_string(c.mode)},
                              {"block", c.block}};
  if (c.pattern == kernels::Pattern::fixed) attention["summary"] = c.summary;
  nlohmann::json out = {{"name", c.name},       {"data", data},       {"context", c.context},
                        {"d_model", c.d_model}, {"layers", c.layers}, {"heads", c.heads},
                        {"d_ff", c.d_ff},       {"attention", attention}, {"dropout", c.dropout},
                        {"recompute", c.recompute}, {"precision", to_string(c.precision)}};
  if (c.expert.enabled()) {
    out["expert"] = {{"kind", "linear_prediction"},         {"order", c.expert.order},
                     {"refit_interval", c.expert.refit_interval}, {"window", c.expert.window},
                     {"ridge", c.expert.ridge},             {"scale_window", c.expert.scale_window}};
  }
  return out;
}

namespace {

// Reads json[key] as T, naming the field when it is missing or of the wrong type.
template <class T>
T field(const nlohmann::json& json, const char* key, const std::string& path, const T* fallback = nullptr) {
  const auto it = json.find(key);
  if (it == json.end()) {
    if (fallback) return *fallback;
    throw ConfigError("config: missing field " + path + key);
  }
  // nlohmann converts 1.5 to an integer field as 1 and -1 to an unsigned one as 2^64 - 1: refuse both.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!it->is_number_integer() || (std::is_unsigned_v<T> && !it->is_number_unsigned())) {
      throw ConfigError("config: field " + path + key + " must be a whole number" +
                        (std::is_unsigned_v<T> ? " >= 0" : "") + ", got " + it->dump());
    }
  }
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError("config: field " + path + key + " has the wrong type (" + it->type_name() + ")");
  }
}

}  // namespace

ModelConfig model_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw ConfigError("config: expected a JSON object");
  ModelConfig c;
  const ModelConfig defaults;
  c.name = field<std::string>(json, "name", "", &defaults.name);
  const auto data_it = json.find("data");
  if (data_it == json.end() || !data_it->is_object()) throw ConfigError("config: missing object 'data'");
  c.kind = parse_data_kind(field<std::string>(*data_it, "kind", "data."));
  if (c.kind == DataKind::image) {
    c.image_height = field<int64_t>(*data_it, "height", "data.");
    c.image_width = field<int64_t>(*data_it, "width", "data.");
    c.image_channels = field<int64_t>(*data_it, "channels", "data.");
  }
  c.amplitude_taps = field<int64_t>(*data_it, "amplitude_taps", "data.", &defaults.amplitude_taps);
  c.context = field<int64_t>(json, "context", "");
  c.d_model = field<int64_t>(json, "d_model", "");
  c.layers = field<int64_t>(json, "layers", "");
  c.heads = field<int64_t>(json, "heads", "");
  const int64_t default_ff = 4 * c.d_model;
  c.d_ff = field<int64_t>(json, "d_ff", "", &default_ff);
  const auto attention_it = json.find("attention");
  if (attention_it == json.end() || !attention_it->is_object()) {
    throw ConfigError("config: missing object 'attention'");
  }
  try {
    c.pattern = kernels::parse_pattern(field<std::string>(*attention_it, "pattern", "attention."));
    const std::string merged = "merged";
    c.mode = kernels::parse_combination(field<std::string>(*attention_it, "mode", "attention.", &merged));
  } catch (const kernels::Error& e) {
    throw ConfigError(std::string("config: ") + e.what());
  }
  c.stride = field<int64_t>(*attention_it, "stride", "attention.");
  c.summary = field<int64_t>(*attention_it, "summary", "attention.", &defaults.summary);
  c.block = field<int>(*attention_it, "block", "attention.", &defaults.block);
  c.dropout = field<double>(json, "dropout", "", &defaults.dropout);
  c.recompute = field<bool>(json, "recompute", "", &defaults.recompute);
  const std::string fp32 = "fp32";
  c.precision = parse_precision(field<std::string>(json, "precision", "", &fp32));
  if (const auto expert_it = json.find("expert"); expert_it != json.end()) {
    if (!expert_it->is_object()) throw ConfigError("config: 'expert' must be an object");
    const std::string kind = field<std::string>(*expert_it, "kind", "expert.");
    if (kind != "linear_prediction") {
      throw ConfigError("config: unknown expert.kind '" + kind + "' (expected linear_prediction)");
    }
    const LinearExpertConfig d;
    c.expert.order = field<int64_t>(*expert_it, "order", "expert.");
    c.expert.refit_interval = field<int64_t>(*expert_it, "refit_interval", "expert.", &d.refit_interval);
    c.expert.window = field<int64_t>(*expert_it, "window", "expert.", &d.window);
    c.expert.ridge = field<double>(*expert_it, "ridge", "expert.", &d.ridge);
    c.expert.scale_window = field<int64_t>(*expert_it, "scale_window", "expert.", &d.scale_window);
  }
  c.validate();
  return c;
}

std::vector<std::string> preset_names() { return {"image-small", "text-small", "audio-small", "audio-long"}; }

ModelConfig preset(const std::string& name) {
  ModelConfig c;
  c.name = name;
  if (name == "image-small") {
    // Fashion-MNIST: 28 x 28 gray, one byte per pixel; the stride is one image row.
    c.kind = DataKind::image;
    c.image_height = 28;
    c.image_width = 28;
    c.image_channels = 1;
    c.context = 784;
    c.d_model = 256;
    c.layers = 6;
    c.heads = 4;
    c.d_ff = 1024;
    c.pattern = kernels::Pattern::strided;
    c.stride = 28;
    c.mode = kernels::Combination::merged;
    c.block = 32;
  } else if (name == "text-small") {
    c.kind = DataKind::text;
    c.context = 1024;
    c.d_model = 256;
    c.layers = 4;
    c.heads = 4;
    c.d_ff = 1024;
    c.pattern = kernels::Pattern::fixed;
    c.stride = 32;
    c.summary = 8;
    c.mode = kernels::Combination::merged;
    c.block = 32;
  } else if (name == "audio-small") {
    // 16,384 samples = 1.37 s of 12 kHz mu-law; l = 128 as in the paper.
    c.kind = DataKind::audio;
    c.context = 16384;
    c.d_model = 192;
    c.layers = 4;
    c.heads = 4;
    c.d_ff = 768;
    c.pattern = kernels::Pattern::strided;
    c.stride = 128;
    c.mode = kernels::Combination::merged;
    c.block = 64;
    c.recompute = true;
  } else if (name == "audio-long") {
    // audio-small at 65,536 samples = 5.5 s, the paper's audio context, with l = 256 = sqrt(n): each position
    // attends about 2 sqrt(n) keys at most, so generating late in the context costs about what it costs early.
    c = preset("audio-small");
    c.name = name;
    c.context = 65536;
    c.stride = 256;
  } else {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown preset '" + name + "' (known: " + known + ")");
  }
  c.validate();
  return c;
}

}  // namespace stx::models
