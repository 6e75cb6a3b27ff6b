// The architecture of a Sparse Transformer, as stored in a checkpoint's config.json.
//
// One JSON object describes everything needed to rebuild the network: what the bytes are (data kind and,
// for images, H x W x C), the context length, the widths, and the attention pattern. The training recipe
// travels beside it in the same file but is the engine's business (see engine/trainer.h).
//
//   {"name": "text-small", "data": {"kind": "text"}, "context": 1024, "d_model": 256, "layers": 4,
//    "heads": 4, "d_ff": 1024, "attention": {"pattern": "fixed", "stride": 32, "summary": 8,
//    "mode": "merged", "block": 32}, "dropout": 0.0, "recompute": false, "precision": "fp32"}
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stx/models/data_kind.h"
#include "stx/kernels/pattern.h"
#include "stx/models/linear_predictor.h"

namespace stx::models {

// Thrown for a config that cannot describe a model: one plain line naming the field and the reason.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

DataKind parse_data_kind(const std::string& name);  // "image" | "text" | "audio"; ConfigError otherwise

// Activation precision; weights are always fp32. On CUDA, bf16 or fp16 autocast. On the CPU, bf16 autocast
// (the linear layers in bf16, attention and GELU in our fp32 kernels) where the processor has AVX512-BF16,
// else fp32; fp16 runs as fp32 there (see effective_precision in sparse_transformer.h).
enum class Precision { fp32, bf16, fp16 };
const char* to_string(Precision p);
Precision parse_precision(const std::string& name);
// Whether this processor runs LibTorch's bf16 matmuls in hardware (AVX512-BF16 through oneDNN), at about
// twice the speed of fp32 ones. Without it they are emulated and slower than fp32.
bool cpu_has_fast_bf16();
// The activation precision a model asking for `asked` actually runs in on that device: `asked` on CUDA; on
// the CPU bf16 where cpu_has_fast_bf16() (fp16 and emulated bf16 run as fp32).
Precision effective_precision(Precision asked, bool on_cuda);

struct ModelConfig {
  std::string name = "custom";
  DataKind kind = DataKind::text;
  int64_t image_height = 0, image_width = 0, image_channels = 0;  // images only; context = H * W * C
  // Audio only, 0 for none: the model also sees the previous `amplitude_taps` samples as amplitudes
  // (mu-law decoded to [-1, 1]) through one linear map into the embedding. A byte embedding alone leaves
  // the network to learn that neighbouring bytes are neighbouring levels; a linear predictor of the signal
  // is then one matrix away. Stored as data.amplitude_taps.
  int64_t amplitude_taps = 0;
  // The largest amplitude_taps and expert.order validate() takes (the training options check against these).
  static constexpr int64_t kMaxAmplitudeTaps = 1024;
  static constexpr int64_t kMaxExpertOrder = 1024;
  // Audio only, off unless expert.order > 0: the linear-prediction expert (linear_predictor.h). The output
  // is then a product of experts, logits = lambda * network + w * log p_expert, with lambda and w learned
  // (starting at 0 and 1: a new model starts as the expert alone), and the network also sees the expert's
  // predicted byte and its log scale. This departs from the paper's model, whose output is the network's
  // alone. Stored as the object "expert".
  LinearExpertConfig expert;

  int64_t context = 1024;  // n: the longest sequence the position embeddings cover
  int64_t d_model = 256;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t d_ff = 1024;

  kernels::Pattern pattern = kernels::Pattern::strided;
  int64_t stride = 32;   // l; also the row width of the text/audio position embedding, even for dense
  int64_t summary = 8;   // c, fixed only
  kernels::Combination mode = kernels::Combination::merged;
  int block = 32;        // B of the kernel block layout

  double dropout = 0.0;
  bool recompute = false;  // keep only each block's input; recompute its activations in backward
  Precision precision = Precision::fp32;

  // The factorised position embedding (eq 15): the extent of each axis. Images: {H, W, C};
  // text and audio: {ceil(context / l), l}, the (i div l, i mod l) of the stride.
  std::vector<int64_t> position_axes() const;
  // The parameters SparseTransformer(config) has, counted from the config alone (nothing is allocated):
  // what a loader checks against the memory there is and the weights file before it builds the model.
  int64_t parameter_count() const;
  // The coordinate of position i along each axis of position_axes().
  std::vector<int64_t> position_coordinates(int64_t i) const;
  // The attention pattern of every head of residual block `layer`.
  std::vector<kernels::HeadPattern> layer_patterns(int layer) const;

  int64_t head_dim() const { return d_model / heads; }
  // Throws ConfigError naming the first field out of range.
  void validate() const;
};

// JSON round trip. from_json validates and names the offending field; unknown keys are ignored so that
// the engine's recipe can share the file.
nlohmann::json to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const nlohmann::json& json);

// Named presets of 1-10M parameters that train on a 2-core CPU: "image-small" (Fashion-MNIST 28x28x1,
// strided), "text-small" (fixed, merged), "audio-small" (strided, mu-law 12 kHz).
std::vector<std::string> preset_names();
ModelConfig preset(const std::string& name);  // ConfigError lists the known names

}  // namespace stx::models
