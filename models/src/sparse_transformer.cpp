#include "stx/models/sparse_transformer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/init.h>

#include <array>
#include <cmath>

#include "stx/kernels/layout.h"
#include "stx/models/mulaw.h"
#include "stx/models/sparse_attention.h"

namespace stx::models {


// ---- residual block ----------------------------------------------------------------------------------

namespace {
// Our CPU attention kernels take fp32: under CPU autocast (see AutocastScope) the linear layers hand them
// bf16. The activation takes bf16 as it comes (gelu_sigmoid), and hands bf16 on to the next linear layer.
at::Tensor float_on_cpu(const at::Tensor& x) {
  return x.is_cpu() && x.scalar_type() != at::kFloat ? x.to(at::kFloat) : x;
}
}  // namespace

ResidualBlockImpl::ResidualBlockImpl(const ModelConfig& config, int layer)
    : config_(config), patterns_(config.layer_patterns(layer)) {
  const int64_t d = config.d_model;
  norm_attention = register_module("norm_attention", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
  attention_out = register_module("attention_out", torch::nn::Linear(d, d));
  norm_ff = register_module("norm_ff", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ff_in = register_module("ff_in", torch::nn::Linear(d, config.d_ff));
  ff_out = register_module("ff_out", torch::nn::Linear(config.d_ff, d));
  dropout = register_module("dropout", torch::nn::Dropout(config.dropout));
}

at::Tensor ResidualBlockImpl::sparse_attention(const at::Tensor& qkv_rows) {
  const int64_t batch = qkv_rows.size(0), length = qkv_rows.size(1);
  // The op slices q, k and v of [B, T, 3, H, Dh] as strided views, and writes its gradient packed the same way.
  auto layout = kernels::cached_layout(length, config_.block, patterns_);
  const at::Tensor out = sparse_attention_packed(float_on_cpu(qkv_rows), std::move(layout));  // [B, H, T, Dh]
  return out.transpose(1, 2).reshape({batch, length, config_.d_model});
}

at::Tensor ResidualBlockImpl::branch(const at::Tensor& h) {
  return branch(h, [this](const at::Tensor& qkv_rows) { return sparse_attention(qkv_rows); });
}

at::Tensor ResidualBlockImpl::branch(const at::Tensor& h, const Attend& attend) {
  const int64_t batch = h.size(0), length = h.size(1);
  const at::Tensor qkv_rows =
      qkv->forward(norm_attention->forward(h)).view({batch, length, 3, config_.heads, config_.head_dim()});
  const at::Tensor a = dropout->forward(attention_out->forward(attend(qkv_rows)));
  const at::Tensor b =
      dropout->forward(ff_out->forward(gelu_sigmoid(ff_in->forward(norm_ff->forward(h + a)))));
  return a + b;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Mixed precision: weights stay fp32 while autocast runs the matmuls in bf16 or fp16; layer norm and the
// loss stay fp32. On CUDA the attention kernels take q, k and v in that dtype too; on the CPU (bf16 only)
// our kernels are fp32, so sparse_attention() widens its input. LibTorch 2.4 renamed the API.
class AutocastScope {
 public:
  AutocastScope(bool cuda, bool enable, at::ScalarType dtype) : cuda_(cuda), enabled_(enable) {
    if (!enabled_) return;
    was_on_ = is_on(cuda_);
    previous_dtype_ = dtype_of(cuda_);
    set(cuda_, true, dtype);
  }
  ~AutocastScope() {
    if (!enabled_) return;
    set(cuda_, was_on_, previous_dtype_);
    if (!was_on_ && !is_on(!cuda_)) at::autocast::clear_cache();
  }
  // The dtype autocast runs CUDA (or CPU) matmuls in right now, or Undefined when it is off.
  static at::ScalarType active(bool cuda) { return is_on(cuda) ? dtype_of(cuda) : at::ScalarType::Undefined; }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  static bool is_on(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
  static at::ScalarType dtype_of(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }
  static void set(bool cuda, bool on, at::ScalarType dtype) {
    at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
    at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
  }
#else
  static bool is_on(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
  static at::ScalarType dtype_of(bool cuda) {
    return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
  }
  static void set(bool cuda, bool on, at::ScalarType dtype) {
    if (cuda) {
      at::autocast::set_enabled(on);
      at::autocast::set_autocast_gpu_dtype(dtype);
    } else {
      at::autocast::set_cpu_enabled(on);
      at::autocast::set_autocast_cpu_dtype(dtype);
    }
  }
#endif
  bool cuda_;
  bool enabled_;
  bool was_on_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

// Recomputation (the paper's "gradient checkpointing"): the forward keeps only the block input; the
// backward runs the branch again with the graph on and differentiates it. Dropout masks are reproduced
// by restoring the state of the generator dropout drew from before the first run: the CPU's, and on CUDA
// the device's (without it the recomputed masks differed and the gradients were 27-57% off on an H100).
class RecomputedBranch : public torch::autograd::Function<RecomputedBranch> {
 public:
  static at::Tensor forward(AutogradContext* ctx, ResidualBlockImpl* block, const at::Tensor& h,
                            at::TensorList parameters) {
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["rng"] = at::detail::getDefaultCPUGenerator().get_state();
    if (h.is_cuda())
      ctx->saved_data["cuda_rng"] = at::globalContext().defaultGenerator(h.device()).get_state();
    // The backward runs on autograd's thread, outside the caller's autocast scope: remember it.
    const bool cuda = h.is_cuda();
    ctx->saved_data["autocast_cuda"] = cuda;
    ctx->saved_data["autocast"] = static_cast<int64_t>(AutocastScope::active(cuda));
    ctx->save_for_backward({h});
    (void)parameters;  // inputs only so that autograd routes their gradients through backward()
    at::NoGradGuard no_grad;
    return block->branch(h);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto* block = reinterpret_cast<ResidualBlockImpl*>(ctx->saved_data["block"].toInt());
    const at::Tensor h = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    auto generator = at::detail::getDefaultCPUGenerator();
    const at::Tensor state_now = generator.get_state();
    generator.set_state(ctx->saved_data["rng"].toTensor());
    const bool cuda_rng = ctx->saved_data.count("cuda_rng") > 0;
    at::Generator cuda_generator;
    at::Tensor cuda_state_now;
    if (cuda_rng) {
      cuda_generator = at::globalContext().defaultGenerator(h.device());
      cuda_state_now = cuda_generator.get_state();
      cuda_generator.set_state(ctx->saved_data["cuda_rng"].toTensor());
    }
    at::Tensor out;
    {
      at::AutoGradMode grad_mode(true);
      const auto autocast_dtype = static_cast<at::ScalarType>(ctx->saved_data["autocast"].toInt());
      AutocastScope autocast(ctx->saved_data["autocast_cuda"].toBool(), autocast_dtype != at::ScalarType::Undefined,
                             autocast_dtype);
      out = block->branch(h);
    }
    generator.set_state(state_now);
    if (cuda_rng) cuda_generator.set_state(cuda_state_now);

    variable_list inputs = {h};
    for (const at::Tensor& p : block->parameters()) inputs.push_back(p);
    const variable_list grads = torch::autograd::grad({out}, inputs, {grad_outputs[0]},
                                                      /*retain_graph=*/false, /*create_graph=*/false,
                                                      /*allow_unused=*/true);
    variable_list result = {at::Tensor()};  // the block pointer
    result.insert(result.end(), grads.begin(), grads.end());
    return result;
  }
};

}  // namespace

// ---- the network -------------------------------------------------------------------------------------

SparseTransformerImpl::SparseTransformerImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  const int64_t d = config_.d_model;
  token_embedding = register_module("token_embedding", torch::nn::Embedding(257, d));  // 256 bytes + start
  const std::vector<int64_t> axes = config_.position_axes();
  for (size_t a = 0; a < axes.size(); ++a) {
    position_embeddings.push_back(
        register_module("position_embedding_" + std::to_string(a), torch::nn::Embedding(axes[a], d)));
  }
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int layer = 0; layer < config_.layers; ++layer) {
    block_list.push_back(ResidualBlock(config_, layer));
    blocks->push_back(block_list.back());
  }
  final_norm = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  output = register_module("output", torch::nn::Linear(d, 256));
  if (config_.amplitude_taps > 0) {
    amplitude = register_module(
        "amplitude", torch::nn::Linear(torch::nn::LinearOptions(config_.amplitude_taps, d).bias(false)));
  }
  if (config_.expert.enabled()) {
    expert_byte = register_module("expert_byte", torch::nn::Embedding(256, d));
    expert_scale = register_module("expert_scale", torch::nn::Linear(torch::nn::LinearOptions(1, d).bias(false)));
    network_weight = register_parameter("network_weight", at::zeros({1}));
    expert_weight = register_parameter("expert_weight", at::ones({1}));
  }

  std::vector<int64_t> coords;
  coords.reserve(config_.context * axes.size());
  for (int64_t i = 0; i < config_.context; ++i) {
    for (int64_t c : config_.position_coordinates(i)) coords.push_back(c);
  }
  coordinates_ = register_buffer(
      "coordinates", at::tensor(coords, at::kLong).view({config_.context, static_cast<int64_t>(axes.size())}));
  initialise();
}

void SparseTransformerImpl::initialise() {
  at::NoGradGuard no_grad;
  constexpr double kStd = 0.02;
  const double residual_std = kStd / std::sqrt(2.0 * static_cast<double>(config_.layers));
  token_embedding->weight.normal_(0.0, kStd);
  for (auto& e : position_embeddings) e->weight.normal_(0.0, kStd);
  for (auto& block : block_list) {
    for (torch::nn::Linear* linear : {&block->qkv, &block->ff_in}) {
      (*linear)->weight.normal_(0.0, kStd);
      (*linear)->bias.zero_();
    }
    // The two projections that write into the residual stream, scaled down with depth (paper: 1/sqrt(2N)).
    for (torch::nn::Linear* linear : {&block->attention_out, &block->ff_out}) {
      (*linear)->weight.normal_(0.0, residual_std);
      (*linear)->bias.zero_();
    }
  }
  output->weight.normal_(0.0, kStd);
  output->bias.zero_();
  if (amplitude) amplitude->weight.zero_();
  if (expert_byte) {
    expert_byte->weight.zero_();
    expert_scale->weight.zero_();
    network_weight.fill_(0.0);
    expert_weight.fill_(1.0);
  }
}

at::Tensor SparseTransformerImpl::position_embedding(int64_t first_position, int64_t length,
                                                     const at::Device& device) {
  return position_embedding_of(coordinates_.narrow(0, first_position, length).to(device));
}

at::Tensor SparseTransformerImpl::position_embedding_of(const at::Tensor& coordinates) {
  at::Tensor sum;
  for (size_t a = 0; a < position_embeddings.size(); ++a) {
    const at::Tensor e = position_embeddings[a]->forward(coordinates.select(1, static_cast<int64_t>(a)));
    sum = sum.defined() ? sum + e : e;
  }
  return sum;  // [length, d]
}

at::Tensor SparseTransformerImpl::embed_at(const at::Tensor& input_tokens, const at::Tensor& positions) {
  TORCH_CHECK(positions.dim() == 1 && positions.size(0) == input_tokens.size(1),
              "SparseTransformer: embed_at takes one position per input column, got ", positions.sizes(),
              " for ", input_tokens.sizes());
  const at::Tensor coordinates = coordinates_.to(positions.device()).index_select(0, positions);
  return token_embedding->forward(input_tokens) + position_embedding_of(coordinates);
}

at::Tensor SparseTransformerImpl::embed(const at::Tensor& input_tokens, int64_t first_position) {
  const int64_t length = input_tokens.size(1);
  TORCH_CHECK(first_position >= 0 && first_position + length <= config_.context, "SparseTransformer: positions ",
              first_position, "..", first_position + length - 1, " exceed the context of ", config_.context);
  return token_embedding->forward(input_tokens) + position_embedding(first_position, length, input_tokens.device());
}

at::Tensor SparseTransformerImpl::head(const at::Tensor& h) { return output->forward(final_norm->forward(h)); }

at::Tensor SparseTransformerImpl::expert_embedding(const at::Tensor& predicted, const at::Tensor& scale_feature) {
  return expert_byte->forward(predicted) + expert_scale->forward(scale_feature.unsqueeze(-1));
}

at::Tensor SparseTransformerImpl::mix_with_expert(const at::Tensor& network_logits, const at::Tensor& expert_log_probs) {
  return network_weight * network_logits + expert_weight * expert_log_probs;
}

at::Tensor SparseTransformerImpl::forward(const at::Tensor& bytes) {
  if (!config_.expert.enabled()) return forward(bytes, ExpertInputs{});
  TORCH_CHECK(bytes.dim() == 2, "SparseTransformer: expected [batch, length] bytes, got ", bytes.sizes());
  return forward(bytes, linear_expert_inputs(config_.expert, bytes, 0));
}

at::Tensor SparseTransformerImpl::forward(const at::Tensor& bytes, const ExpertInputs& expert) {
  TORCH_CHECK(bytes.dim() == 2, "SparseTransformer: expected [batch, length] bytes, got ", bytes.sizes());
  TORCH_CHECK(config_.expert.enabled() == expert.log_probs.defined(),
              "SparseTransformer: the expert's inputs are given exactly when the config has an expert");
  const int64_t batch = bytes.size(0), length = bytes.size(1);
  TORCH_CHECK(length >= 1 && length <= config_.context, "SparseTransformer: length ", length,
              " is outside 1..", config_.context);
  // Input at position i is byte i-1; position 0 sees the start token (256).
  const at::Tensor tokens = bytes.to(at::kLong);
  const at::Tensor start = at::full({batch, 1}, 256, tokens.options());
  const at::Tensor inputs = at::cat({start, tokens.narrow(1, 0, length - 1)}, 1);

  const Precision precision = effective_precision(config_.precision, bytes.is_cuda());
  AutocastScope autocast(bytes.is_cuda(), precision != Precision::fp32,
                         precision == Precision::bf16 ? at::kBFloat16 : at::kHalf);
  at::Tensor h = embed(inputs, 0);
  if (amplitude) h = h + amplitude->forward(amplitude_inputs(tokens, config_.amplitude_taps));
  if (expert_byte) {
    TORCH_CHECK(expert.log_probs.size(0) == batch && expert.log_probs.size(1) == length,
                "SparseTransformer: the expert's inputs cover ", expert.log_probs.sizes(), ", not the bytes' ",
                bytes.sizes());
    h = h + expert_embedding(expert.predicted.to(bytes.device()), expert.scale_feature.to(bytes.device()));
  }
  for (auto& block : block_list) {
    if (config_.recompute && is_training() && at::GradMode::is_enabled()) {
      const std::vector<at::Tensor> params = block->parameters();
      h = h + RecomputedBranch::apply(block.get(), h, at::TensorList(params));
    } else {
      h = h + block->branch(h);
    }
  }
  const at::Tensor logits = head(h).to(at::kFloat);  // logits in fp32 whatever the activations were
  if (!expert_byte) return logits;
  return mix_with_expert(logits, expert.log_probs.to(bytes.device()));
}

bool cpu_has_fast_bf16() {
  // LibTorch sends CPU bf16 matmuls to oneDNN when it has it and the processor has AVX-512 BW, VL and DQ;
  // oneDNN then uses the BF16 dot-product instructions where they exist.
  static const bool fast = [] {
    __builtin_cpu_init();
    return at::hasMKLDNN() && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }();
  return fast;
}

Precision effective_precision(Precision asked, bool on_cuda) {
  if (on_cuda) return asked;
  return asked == Precision::bf16 && cpu_has_fast_bf16() ? Precision::bf16 : Precision::fp32;
}

int64_t SparseTransformerImpl::parameter_count() const {
  int64_t total = 0;
  for (const at::Tensor& p : parameters()) total += p.numel();
  return total;
}

at::Tensor mulaw_amplitudes(const at::Tensor& bytes) {
  const std::array<float, 256>& table = mulaw_amplitude_table();
  const at::Tensor amplitudes = at::from_blob(const_cast<float*>(table.data()), {256}, at::kFloat).to(bytes.device());
  return amplitudes.index_select(0, bytes.reshape({-1}).to(at::kLong)).view(bytes.sizes());
}

at::Tensor amplitude_inputs(const at::Tensor& bytes, int64_t taps) {
  const int64_t batch = bytes.size(0), length = bytes.size(1);
  const at::Tensor padded =
      at::cat({at::zeros({batch, taps}, bytes.options().dtype(at::kFloat)), mulaw_amplitudes(bytes)}, 1);
  // Window j of the padded row covers bytes j - taps .. j - 1: exactly position j's inputs.
  return padded.unfold(1, taps, 1).narrow(1, 0, length).contiguous();
}

double total_bits(const at::Tensor& logits, const at::Tensor& bytes) {
  const at::Tensor log_probs = at::log_softmax(logits.to(at::kFloat).reshape({-1, logits.size(-1)}), -1);
  const at::Tensor nll = -log_probs.gather(1, bytes.reshape({-1, 1}).to(at::kLong)).sum();
  return nll.item<double>() / std::log(2.0);
}

}  // namespace stx::models
