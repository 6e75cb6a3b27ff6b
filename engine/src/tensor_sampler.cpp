#include "stx/engine/tensor_sampler.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "stx/engine/error.h"

namespace stx::engine {

at::Tensor pick_bytes(const at::Tensor& logits, const SamplingSettings& settings,
                      const at::Tensor& uniforms) {
  if (logits.dim() != 2 || logits.size(1) != 256 || uniforms.dim() != 1 ||
      uniforms.size(0) != logits.size(0)) {
    throw Error("pick_bytes: expected logits [B, 256] and uniforms [B]");
  }
  const at::Tensor l = logits.to(at::kDouble);
  if (settings.temperature == 0.0) return l.argmax(1);  // the first of equal maxima, as pick_byte
  const int64_t rows = l.size(0);
  // Ranked most likely first where top-k or top-p cut the list; byte order otherwise (the walk below is the
  // same either way, the draw differs only in which bytes come first).
  const bool truncated = (settings.top_k > 0 && settings.top_k < 256) || settings.top_p < 1.0;
  at::Tensor ranked = l, order = at::arange(256, l.options().dtype(at::kLong)).expand({rows, 256});
  if (truncated) std::tie(ranked, order) = at::sort(l, /*stable=*/true, /*dim=*/1, /*descending=*/true);
  const at::Tensor top = std::get<0>(l.max(1, /*keepdim=*/true));
  at::Tensor p = at::exp((ranked - top) / settings.temperature);
  if (settings.min_p > 0.0) p = at::where(p < settings.min_p, at::zeros_like(p), p);
  // Ranks kept: the first top_k, then (top-p) up to the first whose cumulative share reaches top_p.
  const at::Tensor rank = at::arange(256, l.options().dtype(at::kLong)).expand({rows, 256});
  at::Tensor kept = settings.top_k > 0 ? rank < settings.top_k : at::ones_like(rank, at::kBool);
  if (settings.top_p < 1.0) {
    const at::Tensor reached = (at::cumsum(p / p.sum(1, true), 1) >= settings.top_p) & kept;
    // The first rank that reaches it, or every kept rank when none does.
    const at::Tensor any = reached.any(1, /*keepdim=*/true);
    const at::Tensor first =
        at::where(any, reached.to(at::kLong).argmax(1, true), at::full_like(top, 255, at::kLong));
    kept = kept & (rank <= first);
  }
  p = at::where(kept, p, at::zeros_like(p));
  // The inverse CDF: the first rank whose running sum passes u times the kept total; past the end (u * total
  // rounded up to it), the last rank with any probability.
  const at::Tensor running = at::cumsum(p, 1);
  const at::Tensor target = uniforms.to(at::kDouble).unsqueeze(1) * running.select(1, 255).unsqueeze(1);
  const at::Tensor passed = running > target;
  const at::Tensor last_positive = (rank * (p > 0.0).to(at::kLong)).amax(1, true);
  const at::Tensor chosen =
      at::where(passed.any(1, true), passed.to(at::kLong).argmax(1, true), last_positive);
  return order.gather(1, chosen).squeeze(1);
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
      inputs = pick_bytes(expert->mix(decoder.step_on_device(inputs, expert->embedding_rows())), settings,
                          uniforms[k]);
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
