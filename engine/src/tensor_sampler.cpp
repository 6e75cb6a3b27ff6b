#include "stx/engine/tensor_sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "stx/engine/error.h"
#include "stx/models/draw_op.h"

namespace stx::engine {

namespace {

kernels::DrawParams rule_of(const SamplingSettings& settings) {
  kernels::DrawParams rule;
  rule.temperature = settings.temperature;
  rule.top_k = settings.top_k;
  rule.top_p = settings.top_p;
  rule.min_p = settings.min_p;
  return rule;
}

}  // namespace

at::Tensor pick_bytes(const at::Tensor& logits, const SamplingSettings& settings,
                      const at::Tensor& uniforms) {
  if (logits.dim() != 2 || logits.size(1) != 256 || uniforms.dim() != 1 ||
      uniforms.size(0) != logits.size(0)) {
    throw Error("pick_bytes: expected logits [B, 256] and uniforms [B]");
  }
  return models::draw_bytes(logits, uniforms, rule_of(settings));
}

at::Tensor decode_steps_on_device(models::TorchDecoder& decoder, const at::Tensor& first_inputs,
                                  const SamplingSettings& settings, const at::Tensor& uniforms,
                                  models::DeviceLinearExpert* expert) {
  if (uniforms.dim() != 2 || uniforms.size(1) != decoder.batch()) {
    throw Error("decode_steps_on_device: expected uniforms [steps, " + std::to_string(decoder.batch()) + "]");
  }
  const int64_t steps = uniforms.size(0);
  at::Tensor drawn = at::empty({steps, decoder.batch()}, first_inputs.options().dtype(at::kLong));
  at::Tensor inputs = first_inputs.to(at::kLong);
  for (int64_t k = 0; k < steps; ++k) {
    if (expert != nullptr) {
      expert->predict();
      // The product of experts is formed inside the draw.
      inputs = models::draw_bytes(decoder.step_on_device(inputs, expert->embedding_rows()), uniforms[k],
                                  rule_of(settings), expert->log_probs(), expert->network_weight(),
                                  expert->expert_weight());
      expert->push(inputs);
    } else {
      inputs = pick_bytes(decoder.step_on_device(inputs), settings, uniforms[k]);
    }
    drawn[k].copy_(inputs);
  }
  return drawn;
}

}  // namespace stx::engine

namespace stx::engine {

DeviceBlockDrawer::DeviceBlockDrawer(models::TorchDecoder& decoder, const SamplingSettings& settings,
                                     int64_t block_steps, models::DeviceLinearExpert* expert,
                                     bool capture_graphs)
    : decoder_(decoder),
      expert_(expert),
      settings_(settings),
      block_steps_(block_steps),
      capture_graphs_(capture_graphs) {
  if (block_steps < 1) throw Error("DeviceBlockDrawer: a block needs at least one step");
}

at::Tensor DeviceBlockDrawer::draw(const at::Tensor& first_inputs, const at::Tensor& uniforms) {
  const int64_t steps = uniforms.dim() == 2 ? uniforms.size(0) : 0;
  if (steps < 1 || steps > block_steps_) {
    throw Error("DeviceBlockDrawer: expected 1.." + std::to_string(block_steps_) + " steps of uniforms");
  }
  if (expert_ != nullptr) {
    // The expert's host-driven part comes before the block: the last input byte, a fit that is due.
    expert_->catch_up(decoder_.position(), first_inputs);
    if (expert_->refit_due_within(steps)) {
      throw std::logic_error("DeviceBlockDrawer: a block of " + std::to_string(steps) +
                             " steps from position " + std::to_string(decoder_.position()) +
                             " crosses a refit of the expert");
    }
  }
  const bool full = steps == block_steps_;
  if (full && capture_graphs_ && !capture_tried_ && eager_full_blocks_ >= 1) {
    capture_tried_ = true;
    first_ = at::empty_like(first_inputs, first_inputs.options().dtype(at::kLong));
    uniforms_ = at::empty_like(uniforms, uniforms.options().dtype(at::kDouble));
    const int64_t position = decoder_.position(), count = expert_ != nullptr ? expert_->count() : 0;
    decoder_.prepare_device_steps();
    if (expert_ != nullptr) expert_->prepare();
    graph_.capture(decoder_.device(),
                   [&] { drawn_ = decode_steps_on_device(decoder_, first_, settings_, uniforms_, expert_); });
    // The capture ran the block's host code (which counted its steps) but none of its launches.
    decoder_.rewind(position);
    if (expert_ != nullptr) expert_->restore_count(count);
    if (!graph_.captured()) drawn_ = at::Tensor();
  }
  if (full && graph_.captured()) {
    first_.copy_(first_inputs);
    uniforms_.copy_(uniforms);
    decoder_.prepare_device_steps();
    if (expert_ != nullptr) expert_->prepare();
    graph_.replay();
    decoder_.replayed(steps);
    if (expert_ != nullptr) expert_->replayed(steps);
    return drawn_;
  }
  if (full) ++eager_full_blocks_;
  return decode_steps_on_device(decoder_, first_inputs, settings_, uniforms, expert_);
}

int64_t DeviceBlockDrawer::next_block_steps(int64_t end) const {
  const int64_t at = decoder_.position();
  int64_t steps = std::min(block_steps_ - at % block_steps_, end - at);
  if (expert_ != nullptr) steps = std::min(steps, expert_->steps_before_refit(at));
  return std::max<int64_t>(steps, 0);
}

std::string DeviceBlockDrawer::graph_status() const {
  if (graph_.captured()) {
    const int64_t nodes = graph_.nodes();
    std::string s = "a CUDA graph of ";
    s += nodes >= 0 ? std::to_string(nodes) + " launches" : "an unknown number of launches";
    s += " a block of " + std::to_string(block_steps_) + " steps";
    if (nodes >= 0) s += " (" + std::to_string((nodes + block_steps_ / 2) / block_steps_) + " a step)";
    return s;
  }
  if (!capture_graphs_) return "no CUDA graph: not asked for";
  if (!capture_tried_) return "no CUDA graph: not tried yet (the second full block is captured)";
  return "no CUDA graph: " + graph_.failure();
}

double DeviceBlockDrawer::launches_per_step() const {
  if (!graph_.captured() || graph_.nodes() < 0) return -1.0;
  return static_cast<double>(graph_.nodes()) / static_cast<double>(block_steps_);
}

}  // namespace stx::engine
