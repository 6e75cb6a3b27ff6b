#include "stx/models/draw_op.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "torch_kernel_bridge.h"

namespace stx::models {

at::Tensor draw_bytes(const at::Tensor& logits, const at::Tensor& uniforms, const kernels::DrawParams& rule,
                      const at::Tensor& expert_log_probs, const at::Tensor& network_weight,
                      const at::Tensor& expert_weight) {
  if (logits.dim() != 2 || logits.size(1) != 256 || uniforms.dim() != 1 ||
      uniforms.size(0) != logits.size(0)) {
    throw std::invalid_argument("draw_bytes: expected logits [B, 256] and uniforms [B]");
  }
  if (uniforms.device() != logits.device())
    throw std::invalid_argument("draw_bytes: uniforms on another device");
  const bool mixed = expert_log_probs.defined();
  if (mixed && (!expert_log_probs.sizes().equals(logits.sizes()) || !network_weight.defined() ||
                !expert_weight.defined() || network_weight.numel() != 1 || expert_weight.numel() != 1)) {
    throw std::invalid_argument(
        "draw_bytes: the expert's log probabilities must be [B, 256], with one weight each");
  }
  const at::Tensor l = logits.to(at::kFloat).contiguous(), u = uniforms.to(at::kDouble).contiguous();
  at::Tensor e, nw, ew;
  if (mixed) {
    e = expert_log_probs.to(at::kFloat).contiguous();
    nw = network_weight.to(at::kFloat).contiguous();
    ew = expert_weight.to(at::kFloat).contiguous();
  }
  at::Tensor bytes = at::empty({logits.size(0)}, logits.options().dtype(at::kLong));
  const detail::DeviceScope scope(l);
  kernels::DrawParams p = rule;
  p.logits = l.data_ptr<float>();
  p.logits_stride = 256;
  p.mix_log_probs = mixed ? e.data_ptr<float>() : nullptr;
  p.network_weight = mixed ? nw.data_ptr<float>() : nullptr;
  p.expert_weight = mixed ? ew.data_ptr<float>() : nullptr;
  p.uniforms = u.data_ptr<double>();
  p.bytes = bytes.data_ptr<int64_t>();
  p.rows = logits.size(0);
  p.device = scope.device;
  p.stream = scope.stream;
  kernels::draw_bytes(p);
  return bytes;
}

}  // namespace stx::models
