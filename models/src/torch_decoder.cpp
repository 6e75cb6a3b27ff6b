#include "stx/models/torch_decoder.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "stx/kernels/fused_linear.h"
#include "torch_kernel_bridge.h"

namespace stx::models {
namespace {

at::ScalarType torch_type(kernels::DType t) { return t == kernels::DType::f16 ? at::kHalf : at::kFloat; }

// Copies every parameter and buffer of `from` into `to` (same config, so the same names and shapes).
void copy_weights(SparseTransformer& from, SparseTransformer& to) {
  at::NoGradGuard no_grad;
  const auto source = from->named_parameters(true);
  for (auto& item : to->named_parameters(true)) item.value().copy_(source[item.key()]);
  const auto source_buffers = from->named_buffers(true);
  for (auto& item : to->named_buffers(true)) item.value().copy_(source_buffers[item.key()]);
}

}  // namespace

TorchDecoder::TorchDecoder(SparseTransformer& model, int64_t batch, int64_t capacity,
                           kernels::DType cache_dtype, const at::Device& device)
    : config_(model->config()),
      device_(device),
      batch_(batch),
      capacity_(capacity == 0 ? model->config().context : capacity),
      cache_dtype_(cache_dtype) {
  if (batch < 1)
    throw std::invalid_argument("decoder: batch must be at least 1, got " + std::to_string(batch));
  if (cache_dtype != kernels::DType::f32 && cache_dtype != kernels::DType::f16) {
    throw std::invalid_argument(std::string("decoder: the KV cache holds float32 or float16, not ") +
                                kernels::to_string(cache_dtype));
  }
  if (capacity_ < 1 || capacity_ > config_.context) {
    throw std::invalid_argument("decoder: capacity must be in 1.." + std::to_string(config_.context) +
                                ", got " + std::to_string(capacity));
  }
  // Our own copy, so that the caller's model stays where it is (the studio keeps one model for every job).
  // Building it draws LibTorch's default generator for the initial weights that the copy then replaces.
  model_ = SparseTransformer(config_);
  copy_weights(model, model_);
  model_->to(device_);
  model_->eval();

  // CUDA's decode kernel takes the queries in the caches' type; the CPU's takes fp32 queries over either.
  attention_type_ = device_.is_cuda() ? torch_type(cache_dtype_) : at::kFloat;
  const auto cache_options = at::TensorOptions().dtype(torch_type(cache_dtype_)).device(device_);
  for (int layer = 0; layer < config_.layers; ++layer) {
    patterns_.push_back(config_.layer_patterns(layer));
    k_cache_.push_back(at::zeros({batch_, config_.heads, capacity_, config_.head_dim()}, cache_options));
    v_cache_.push_back(at::zeros({batch_, config_.heads, capacity_, config_.head_dim()}, cache_options));
  }
  position_on_device_ = at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(device_));
  const char* fused = std::getenv("STX_FUSED_DECODE");
  fused_ = fused == nullptr || std::string(fused) != "0";
}

void TorchDecoder::check_position() const {
  if (position_ >= capacity_) {
    throw std::out_of_range("decoder: position " + std::to_string(position_) + " is past the capacity of " +
                            std::to_string(capacity_));
  }
}

void TorchDecoder::check_tokens(const int32_t* tokens, int64_t count) const {
  for (int64_t k = 0; k < count; ++k) {
    if (tokens[k] < 0 || tokens[k] > 256) {
      throw std::invalid_argument("decoder: input token " + std::to_string(tokens[k]) + " is outside 0..256");
    }
  }
}

at::Tensor TorchDecoder::input_tensor(const int32_t* tokens, int64_t samples, int64_t rows) const {
  at::Tensor host = at::empty({samples, rows}, at::kLong);
  int64_t* out = host.data_ptr<int64_t>();
  for (int64_t k = 0; k < samples * rows; ++k) out[k] = tokens[k];
  return host.to(device_);
}

at::Tensor TorchDecoder::embed(const int32_t* tokens, int64_t samples, int64_t rows) {
  at::Tensor h = model_->embed(input_tensor(tokens, samples, rows), position_);
  if (added_embedding_) {
    const at::Tensor added =
        at::from_blob(const_cast<float*>(added_embedding_), {samples, rows, config_.d_model}, at::kFloat);
    h = h + added.to(device_);
    added_embedding_ = nullptr;
  }
  return h;
}

void TorchDecoder::attend(int layer, const at::Tensor& q, const at::Tensor& out, const at::Tensor& lse,
                          int64_t samples, int64_t rows) const {
  const at::Tensor& k = k_cache_[static_cast<size_t>(layer)];
  const at::Tensor& v = v_cache_[static_cast<size_t>(layer)];
  detail::DeviceScope scope(q);
  kernels::DecodeParams p;
  p.k_cache = k.data_ptr();
  p.v_cache = v.data_ptr();
  p.k_stride = kernels::Strides{k.stride(0), k.stride(1), k.stride(2)};
  p.v_stride = kernels::Strides{v.stride(0), v.stride(1), v.stride(2)};
  // q and out are [samples, rows, heads, head_dim]: one decode call per row, each a [samples, heads] batch.
  p.q_stride = kernels::Strides{q.stride(0), q.stride(2), 0};
  p.out_stride = kernels::Strides{out.stride(0), out.stride(2), 0};
  p.batch = samples;
  p.heads = config_.heads;
  p.head_dim = config_.head_dim();
  p.capacity = capacity_;
  p.dtype = detail::kernel_dtype(q);
  p.cache_dtype = cache_dtype_;
  p.device = scope.device;
  p.stream = scope.stream;
  p.patterns = patterns_[static_cast<size_t>(layer)].data();
  const auto* q_rows = static_cast<const unsigned char*>(q.data_ptr());
  auto* out_rows = static_cast<unsigned char*>(out.data_ptr());
  const int64_t q_row_bytes = q.stride(1) * q.element_size(),
                out_row_bytes = out.stride(1) * out.element_size();
  for (int64_t r = 0; r < rows; ++r) {
    p.q = q_rows + r * q_row_bytes;
    p.out = out_rows + r * out_row_bytes;
    p.position = position_ + r;
    // Under step_on_device (one row) the kernel reads the position where the step keeps it.
    if (on_device_step_) p.position_in_memory = position_on_device_.data_ptr<int64_t>();
    p.lse = r == rows - 1 && lse.defined() ? lse.data_ptr<float>() : nullptr;
    kernels::attention_decode(p);
  }
}

at::Tensor TorchDecoder::attend_cached(int layer, const at::Tensor& qkv, int64_t samples, int64_t rows) {
  const int64_t heads = config_.heads, d = config_.d_model;
  // Keys and values of the new rows into the caches, [samples, heads, rows, head_dim] at position_
  // (at the device's position under step_on_device, which has one row of every sample).
  at::Tensor& k_cache = k_cache_[static_cast<size_t>(layer)];
  at::Tensor& v_cache = v_cache_[static_cast<size_t>(layer)];
  if (on_device_step_) {
    k_cache.index_copy_(2, position_on_device_, qkv.select(2, 1).transpose(1, 2).to(k_cache.scalar_type()));
    v_cache.index_copy_(2, position_on_device_, qkv.select(2, 2).transpose(1, 2).to(v_cache.scalar_type()));
  } else {
    k_cache.narrow(0, 0, samples).narrow(2, position_, rows).copy_(qkv.select(2, 1).transpose(1, 2));
    v_cache.narrow(0, 0, samples).narrow(2, position_, rows).copy_(qkv.select(2, 2).transpose(1, 2));
  }
  const at::Tensor q = qkv.select(2, 0).to(attention_type_).contiguous();
  const at::Tensor attended = at::empty_like(q);
  const bool probing = layer == probe_.layer;
  const at::Tensor lse =
      probing ? at::empty({samples, heads}, at::TensorOptions().dtype(at::kFloat).device(device_))
              : at::Tensor();
  attend(layer, q, attended, lse, samples, rows);
  if (probing) {
    probe_q_.narrow(0, 0, samples).copy_(q.select(1, rows - 1).select(1, probe_.head));
    probe_lse_.narrow(0, 0, samples).copy_(lse.select(1, probe_.head));
    probe_position_ = position_ + rows - 1;
    probe_of_prefix_ = samples < batch_;
  }
  return attended.to(at::kFloat).view({samples, rows, d});
}

at::Tensor TorchDecoder::run_blocks(at::Tensor h, int64_t samples, int64_t rows) {
  for (int layer = 0; layer < config_.layers; ++layer) {
    // The block's own layer on the new rows only, with the attention over the caches.
    h = h + model_->block_list[static_cast<size_t>(layer)]->branch(
                h, [&](const at::Tensor& qkv) { return attend_cached(layer, qkv, samples, rows); });
  }
  return h;
}

at::Tensor TorchDecoder::fused_linear(const at::Tensor& x, const torch::nn::LayerNorm* norm,
                                      const torch::nn::Linear& linear, kernels::Activation activation,
                                      const at::Tensor& residual) const {
  const at::Tensor& w = linear->weight;  // [out, in]
  at::Tensor y = at::empty({x.size(0), w.size(0)}, x.options());
  const detail::DeviceScope scope(x);
  kernels::FusedLinearParams p;
  p.x = x.data_ptr<float>();
  if (norm != nullptr) {
    p.gamma = (*norm)->weight.data_ptr<float>();
    p.beta = (*norm)->bias.data_ptr<float>();
    p.eps = static_cast<float>((*norm)->options.eps());
  }
  p.weight = w.data_ptr<float>();
  p.bias = linear->bias.defined() ? linear->bias.data_ptr<float>() : nullptr;
  p.residual = residual.defined() ? residual.data_ptr<float>() : nullptr;
  p.y = y.data_ptr<float>();
  p.rows = x.size(0);
  p.in = w.size(1);
  p.out = w.size(0);
  p.activation = activation;
  p.device = scope.device;
  p.stream = scope.stream;
  kernels::fused_linear(p);
  return y;
}

at::Tensor TorchDecoder::run_blocks_fused(at::Tensor h) {
  // h [batch, d] float32: per layer four fused products (norm, projection, GELU, residual in each) around
  // the attention, h + a then + b instead of h + (a + b): the same sums to float rounding.
  for (int layer = 0; layer < config_.layers; ++layer) {
    const ResidualBlock& block = model_->block_list[static_cast<size_t>(layer)];
    const at::Tensor qkv = fused_linear(h, &block->norm_attention, block->qkv, kernels::Activation::none, {});
    const at::Tensor attended =
        attend_cached(layer, qkv.view({batch_, 1, 3, config_.heads, config_.head_dim()}), batch_, 1)
            .view({batch_, config_.d_model})
            .contiguous();
    const at::Tensor middle =
        fused_linear(attended, nullptr, block->attention_out, kernels::Activation::none, h);
    const at::Tensor inner =
        fused_linear(middle, &block->norm_ff, block->ff_in, kernels::Activation::gelu, {});
    h = fused_linear(inner, nullptr, block->ff_out, kernels::Activation::none, middle);
  }
  return h;
}

void TorchDecoder::step(const int32_t* input_tokens, float* logits) {
  check_position();
  check_tokens(input_tokens, batch_);
  at::NoGradGuard no_grad;
  const at::Tensor h = run_blocks(embed(input_tokens, batch_, 1), batch_, 1);
  // The one copy to the host per step.
  const at::Tensor host = model_->head(h).reshape({batch_, 256}).to(at::kFloat).to(at::kCPU).contiguous();
  std::memcpy(logits, host.data_ptr<float>(), static_cast<size_t>(batch_ * 256) * sizeof(float));
  ++position_;
  device_position_stale_ = true;
}

at::Tensor TorchDecoder::step_on_device(const at::Tensor& input_tokens, const at::Tensor& added) {
  check_position();
  if (input_tokens.dim() != 1 || input_tokens.size(0) != batch_ || input_tokens.device() != device_ ||
      input_tokens.scalar_type() != at::kLong) {
    throw std::invalid_argument("decoder: step_on_device takes [" + std::to_string(batch_) +
                                "] int64 tokens on " + device_.str());
  }
  if (added.defined() && (added.dim() != 2 || added.size(0) != batch_ || added.size(1) != config_.d_model ||
                          added.device() != device_)) {
    throw std::invalid_argument("decoder: step_on_device adds [" + std::to_string(batch_) + ", " +
                                std::to_string(config_.d_model) + "] rows on " + device_.str());
  }
  if (added_embedding_) throw std::logic_error("decoder: step_on_device adds no host rows to the embedding");
  prepare_device_steps();
  at::NoGradGuard no_grad;
  at::Tensor h = model_->embed_at(input_tokens.view({batch_, 1}), position_on_device_);
  if (added.defined()) h = h + added.to(h.scalar_type()).view({batch_, 1, config_.d_model});
  on_device_step_ = true;
  at::Tensor logits;
  try {
    if (fused_) {
      h = run_blocks_fused(h.view({batch_, config_.d_model}).contiguous());
      logits = fused_linear(h, &model_->final_norm, model_->output, kernels::Activation::none, {});
    } else {
      logits = model_->head(run_blocks(h, batch_, 1)).reshape({batch_, 256}).to(at::kFloat);
    }
  } catch (...) {
    on_device_step_ = false;
    throw;
  }
  on_device_step_ = false;
  position_on_device_.add_(1);
  ++position_;
  return logits;
}

void TorchDecoder::prepare_device_steps() {
  if (!device_position_stale_) return;
  position_on_device_.fill_(position_);
  device_position_stale_ = false;
}

void TorchDecoder::replayed(int64_t steps) {
  if (steps < 0 || position_ + steps > capacity_) {
    throw std::out_of_range("decoder: " + std::to_string(steps) + " replayed steps from position " +
                            std::to_string(position_) + " run past the capacity of " +
                            std::to_string(capacity_));
  }
  position_ += steps;
  if (probe_.on() && steps > 0) {
    probe_position_ = position_ - 1;
    probe_of_prefix_ = false;
  }
}

void TorchDecoder::step_common_prefix(const int32_t* input_tokens, int64_t count) {
  if (count < 1) throw std::invalid_argument("decoder: a common prefix needs at least one position");
  if (position_ != common_prefix_) {
    throw std::logic_error("decoder: a common prefix must come before any step of the samples' own");
  }
  if (position_ + count > capacity_) {
    throw std::out_of_range("decoder: positions " + std::to_string(position_) + ".." +
                            std::to_string(position_ + count - 1) + " are past the capacity of " +
                            std::to_string(capacity_));
  }
  check_tokens(input_tokens, count);
  at::NoGradGuard no_grad;
  // Sample 0 alone, all `count` rows at once; the others get its keys and values.
  run_blocks(embed(input_tokens, 1, count), 1, count);
  if (batch_ > 1) {
    for (size_t layer = 0; layer < k_cache_.size(); ++layer) {
      for (at::Tensor* cache : {&k_cache_[layer], &v_cache_[layer]}) {
        cache->narrow(0, 1, batch_ - 1)
            .narrow(2, position_, count)
            .copy_(cache->narrow(0, 0, 1).narrow(2, position_, count));
      }
    }
  }
  position_ += count;
  common_prefix_ = position_;
  device_position_stale_ = true;
}

void TorchDecoder::rewind(int64_t position) {
  if (position < 0 || position > position_) {
    throw std::out_of_range("decoder: cannot rewind to " + std::to_string(position) + " from " +
                            std::to_string(position_));
  }
  position_ = position;
  common_prefix_ = std::min(common_prefix_, position);
  probe_position_ = -1;
  device_position_stale_ = true;
}

void TorchDecoder::skip_to_for_timing(int64_t position) {
  if (position < position_ || position >= capacity_) {
    throw std::out_of_range("decoder: cannot skip to " + std::to_string(position) + " from " +
                            std::to_string(position_) + " (capacity " + std::to_string(capacity_) + ")");
  }
  position_ = position;
  device_position_stale_ = true;
}

void TorchDecoder::set_probe(int layer, int head) {
  probe_.choose(config_, layer, head);
  probe_position_ = -1;
  const auto options = at::TensorOptions().dtype(at::kFloat).device(device_);
  probe_q_ = at::zeros({batch_, config_.head_dim()}, options);
  probe_lse_ = at::zeros({batch_}, options);
}

void TorchDecoder::probe(int64_t sample, std::vector<int64_t>& positions, std::vector<float>& weights) const {
  positions.clear();
  weights.clear();
  if (!probe_.on() || probe_position_ < 0 || sample < 0 || sample >= batch_) return;
  if (probe_of_prefix_) sample = 0;  // a prefix was computed for sample 0, and every sample shares it
  positions = kernels::attended_set(
      patterns_[static_cast<size_t>(probe_.layer)][static_cast<size_t>(probe_.head)], probe_position_);
  // w_j = exp(scale q.k_j - lse) with the kernel's own normaliser, computed where the keys are.
  at::NoGradGuard no_grad;
  const at::Tensor index = at::tensor(positions, at::kLong).to(device_);
  const at::Tensor keys =
      k_cache_[static_cast<size_t>(probe_.layer)][sample][probe_.head].index_select(0, index).to(at::kFloat);
  const double scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
  const at::Tensor w =
      at::exp(keys.matmul(probe_q_[sample]) * scale - probe_lse_[sample]).to(at::kCPU).contiguous();
  const float* data = w.data_ptr<float>();
  weights.assign(data, data + w.numel());
}

}  // namespace stx::models
