// The checked entry point of draw_bytes (stx/kernels/sampling.h) and its CPU loop; the CUDA kernel is
// cuda/sampling_cuda.cu. Both run draw_rule.h.
#include "stx/kernels/sampling.h"

#include <array>
#include <cmath>
#include <string>

#include "backends.h"
#include "draw_rule.h"

namespace stx::kernels {
namespace {

void draw_bytes_cpu(const DrawParams& p) {
  std::array<float, 256> logits{};
  std::array<double, 256> prob{};
  std::array<int, 256> order{};
  for (int64_t row = 0; row < p.rows; ++row) {
    for (int i = 0; i < 256; ++i) logits[static_cast<size_t>(i)] = draw::logit_of(p, row, i);
    const int best = draw::first_maximum(logits.data());
    if (p.temperature == 0.0) {
      p.bytes[row] = best;
      continue;
    }
    const double top = logits[static_cast<size_t>(best)];
    const bool ranked = draw::ranked(p);
    for (int i = 0; i < 256; ++i) {
      const int r = ranked ? draw::rank_of(logits.data(), i) : i;
      order[static_cast<size_t>(r)] = i;
      prob[static_cast<size_t>(r)] = draw::probability_of(p, logits[static_cast<size_t>(i)], top);
    }
    p.bytes[row] = draw::walk(p, prob.data(), order.data(), p.uniforms[row]);
  }
}

}  // namespace

void draw_bytes(const DrawParams& p_in) {
  const std::string op = "draw bytes";
  STX_KERNEL_CHECK(p_in.rows >= 0, op + ": expected rows >= 0, got " + std::to_string(p_in.rows));
  if (p_in.rows == 0) return;
  STX_KERNEL_CHECK(p_in.logits && p_in.uniforms && p_in.bytes,
                   op + ": logits, uniforms and bytes must not be null");
  STX_KERNEL_CHECK(p_in.mix_log_probs == nullptr || (p_in.network_weight && p_in.expert_weight),
                   op + ": mixing in log probabilities needs both weights");
  STX_KERNEL_CHECK(p_in.temperature >= 0.0 && std::isfinite(p_in.temperature),
                   op + ": the temperature must be finite and >= 0, got " + std::to_string(p_in.temperature));
  STX_KERNEL_CHECK(p_in.top_k >= 0 && p_in.top_k <= 256,
                   op + ": top_k must be in 0..256, got " + std::to_string(p_in.top_k));
  STX_KERNEL_CHECK(p_in.top_p > 0.0 && p_in.top_p <= 1.0,
                   op + ": top_p must be in (0, 1], got " + std::to_string(p_in.top_p));
  STX_KERNEL_CHECK(p_in.min_p >= 0.0 && p_in.min_p < 1.0,
                   op + ": min_p must be in [0, 1), got " + std::to_string(p_in.min_p));
  DrawParams p = p_in;
  if (p.logits_stride == 0) p.logits_stride = 256;
  STX_KERNEL_CHECK(p.logits_stride >= 256, op + ": the row stride must be at least 256");
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::draw_bytes_cuda(p);
#endif
  STX_KERNEL_CHECK(p.device == Device::cpu,
                   op + ": a CUDA pointer was given, but stx_kernels was built without CUDA");
  draw_bytes_cpu(p);
}

}  // namespace stx::kernels
