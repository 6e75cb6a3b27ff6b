#include "stx/engine/evaluate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "stx/engine/data/crops.h"
#include "torch_device.h"

namespace stx::engine {
namespace {

// Eval mode without gradients for the scope; the model's own mode comes back afterwards.
class EvalScope {
 public:
  explicit EvalScope(models::SparseTransformer& model) : model_(model), was_training_(model->is_training()) {
    model_->eval();
  }
  ~EvalScope() {
    if (was_training_) model_->train();
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  models::SparseTransformer& model_;
  bool was_training_;
  at::NoGradGuard no_grad_;
};

// The windows of `length` bytes starting at `starts`, one row each, as token ids on `device`.
at::Tensor window_batch(const std::vector<uint8_t>& stream, const std::vector<size_t>& starts, size_t length,
                        const at::Device& device) {
  at::Tensor bytes = at::empty({static_cast<int64_t>(starts.size()), static_cast<int64_t>(length)}, at::kByte);
  for (size_t b = 0; b < starts.size(); ++b) {
    std::copy_n(stream.data() + starts[b], length, bytes[static_cast<int64_t>(b)].data_ptr<uint8_t>());
  }
  return bytes.to(at::kLong).to(device);
}

}  // namespace

void move_model_to(models::SparseTransformer& model, DeviceKind device) { model->to(torch_device(device)); }

EvaluationResult evaluate_bits_per_byte(models::SparseTransformer& model, const std::vector<uint8_t>& stream,
                                        int64_t context, int64_t record_bytes, int64_t max_windows, int64_t batch,
                                        const std::atomic<bool>* cancel) {
  EvaluationResult result;
  if (stream.empty()) return result;
  const auto windows = evaluation_windows(stream.size(), static_cast<size_t>(context),
                                          static_cast<size_t>(record_bytes), static_cast<size_t>(max_windows));
  const EvalScope scope(model);
  const at::Device device = model->parameters().front().device();
  double total_bits = 0;
  size_t i = 0;
  while (i < windows.size()) {
    if (cancel && cancel->load()) break;
    // A run of windows with the same length goes in one batch (only the last window is ever shorter).
    const size_t length = windows[i].second - windows[i].first;
    std::vector<size_t> starts;
    while (i < windows.size() && static_cast<int64_t>(starts.size()) < batch &&
           windows[i].second - windows[i].first == length) {
      starts.push_back(windows[i].first);
      ++i;
    }
    const at::Tensor bytes = window_batch(stream, starts, length, device);
    total_bits += models::total_bits(model->forward(bytes), bytes);
    result.bytes += static_cast<int64_t>(starts.size() * length);
    result.windows += static_cast<int64_t>(starts.size());
  }
  result.bits_per_byte = result.bytes > 0 ? total_bits / static_cast<double>(result.bytes) : std::nan("");
  return result;
}

EvaluationResult evaluate_bits_per_byte_sliding(models::SparseTransformer& model, const std::vector<uint8_t>& stream,
                                                int64_t context, int64_t batch, const std::atomic<bool>* cancel) {
  EvaluationResult result;
  if (stream.empty() || context < 1) return result;
  const size_t n = stream.size();
  const size_t length = std::min(static_cast<size_t>(context), n);
  const size_t hop = std::max<size_t>(1, length / 2);
  struct Window {
    size_t start, first_scored;  // first_scored: offset in the window of its first byte no earlier window scored
  };
  std::vector<Window> plan;
  for (size_t start = 0, scored_to = 0; scored_to < n; start += hop) {
    start = std::min(start, n - length);  // the last window ends at the stream's end
    plan.push_back({start, scored_to - start});
    scored_to = start + length;
  }

  const EvalScope scope(model);
  const at::Device device = model->parameters().front().device();
  double total_bits = 0;
  for (size_t i = 0; i < plan.size();) {
    if (cancel && cancel->load()) break;
    const size_t count = std::min(plan.size() - i, static_cast<size_t>(std::max<int64_t>(1, batch)));
    std::vector<size_t> starts;
    for (size_t b = 0; b < count; ++b) starts.push_back(plan[i + b].start);
    const at::Tensor bytes = window_batch(stream, starts, length, device);
    const at::Tensor logits = model->forward(bytes);
    for (size_t b = 0; b < count; ++b) {
      const auto row = static_cast<int64_t>(b);
      const auto from = static_cast<int64_t>(plan[i + b].first_scored);
      total_bits += models::total_bits(logits[row].slice(0, from), bytes[row].slice(0, from));
      result.bytes += static_cast<int64_t>(length) - from;
    }
    result.windows += static_cast<int64_t>(count);
    i += count;
  }
  result.bits_per_byte = result.bytes > 0 ? total_bits / static_cast<double>(result.bytes) : std::nan("");
  return result;
}

}  // namespace stx::engine
