// The checked entry points of the linear-prediction expert's step (stx/kernels/linear_expert.h) and their
// CPU loops; the CUDA kernels are cuda/linear_expert_cuda.cu. Both run expert_rule.h.
#include "stx/kernels/linear_expert.h"

#include <string>

#include "backends.h"
#include "expert_rule.h"

namespace stx::kernels {
namespace {

void check(const char* op, const ExpertStepParams& p, bool push) {
  const std::string o = op;
  STX_KERNEL_CHECK(p.batch >= 1 && p.order >= 1 && p.scale_window >= 1 && p.capacity >= 1 && p.d >= 1,
                   o + ": expected batch, order, scale_window, capacity and d >= 1");
  STX_KERNEL_CHECK(p.history && p.errors && p.counts && p.mean && p.amplitudes,
                   o + ": a state pointer is null");
  if (push) {
    STX_KERNEL_CHECK(p.bytes != nullptr, o + ": bytes is null");
  } else {
    STX_KERNEL_CHECK(p.coefficients && p.scale && p.predicted && p.feature && p.log_probs &&
                         p.embedding_rows && p.byte_embedding && p.scale_map && p.edges && p.half_widths,
                     o + ": an output or table pointer is null");
    STX_KERNEL_CHECK(p.feature_divisor != 0.0, o + ": the feature divisor is 0");
  }
  STX_KERNEL_CHECK(p.device == Device::cpu || built_with_cuda(),
                   o + ": a CUDA pointer was given, but stx_kernels was built without CUDA");
}

void predict_cpu(const ExpertStepParams& p) {
  const int64_t columns = p.order + p.capacity;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t c = p.counts[b];
    const double* x = p.history + b * columns + p.order;  // x[t], t >= -order
    const double* a = p.coefficients + b * p.order;
    double sum = 0.0;
    for (int64_t k = 0; k < p.order; ++k) sum += a[k] * x[c - 1 - k];
    const double mean = expert::clamp_d(sum, -1.0, 1.0);
    double error_sum = 0.0;
    for (int64_t k = 0; k < p.scale_window; ++k) error_sum += p.errors[b * p.scale_window + k];
    const double scale = expert::scale_of(p, error_sum, c < p.scale_window ? c : p.scale_window);
    const expert::Prediction pred = expert::prediction_of(p, mean, scale);
    p.mean[b] = mean;
    p.scale[b] = scale;
    p.predicted[b] = pred.byte;
    p.feature[b] = pred.feature;
    for (int k = 0; k < 256; ++k) p.log_probs[b * 256 + k] = expert::log_prob(p, k, mean, pred.spread);
    const float* e = p.byte_embedding + pred.byte * p.d;
    for (int64_t i = 0; i < p.d; ++i) p.embedding_rows[b * p.d + i] = e[i] + pred.feature * p.scale_map[i];
  }
}

void push_cpu(const ExpertStepParams& p) {
  const int64_t columns = p.order + p.capacity;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t c = p.counts[b];
    STX_KERNEL_CHECK(c >= 0 && c < p.capacity, "linear expert push: sample " + std::to_string(b) +
                                                   " has read " + std::to_string(c) +
                                                   " bytes of a capacity of " + std::to_string(p.capacity));
    const int64_t byte = p.bytes[b];
    STX_KERNEL_CHECK(byte >= 0 && byte < 256,
                     "linear expert push: byte " + std::to_string(byte) + " is not 0..255");
    const double x = p.amplitudes[byte];
    const double error = x - p.mean[b];
    p.errors[b * p.scale_window + c % p.scale_window] = error < 0 ? -error : error;
    p.history[b * columns + p.order + c] = x;
    p.counts[b] = c + 1;
  }
}

}  // namespace

void linear_expert_predict(const ExpertStepParams& p) {
  check("linear expert predict", p, false);
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::linear_expert_predict_cuda(p);
#endif
  predict_cpu(p);
}

void linear_expert_push(const ExpertStepParams& p) {
  check("linear expert push", p, true);
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::linear_expert_push_cuda(p);
#endif
  push_cpu(p);
}

}  // namespace stx::kernels
