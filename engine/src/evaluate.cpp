#include "stx/engine/evaluate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "stx/engine/crops.h"

namespace stx::engine {

EvaluationResult evaluate_bits_per_byte(models::SparseTransformer& model, const std::vector<uint8_t>& stream,
                                        int64_t context, int64_t record_bytes, int64_t max_windows, int64_t batch,
                                        const std::atomic<bool>* cancel) {
  EvaluationResult result;
  if (stream.empty()) return result;
  const auto windows = evaluation_windows(stream.size(), static_cast<size_t>(context),
                                          static_cast<size_t>(record_bytes), static_cast<size_t>(max_windows));
  const bool was_training = model->is_training();
  model->eval();
  at::NoGradGuard no_grad;
  const at::Device device = model->parameters().front().device();
  double total_bits = 0;
  size_t i = 0;
  while (i < windows.size()) {
    if (cancel && cancel->load()) break;
    // A run of windows with the same length goes in one batch (only the last window is ever shorter).
    const size_t length = windows[i].second - windows[i].first;
    std::vector<int64_t> starts;
    while (i < windows.size() && static_cast<int64_t>(starts.size()) < batch &&
           windows[i].second - windows[i].first == length) {
      starts.push_back(static_cast<int64_t>(windows[i].first));
      ++i;
    }
    at::Tensor bytes = at::empty({static_cast<int64_t>(starts.size()), static_cast<int64_t>(length)}, at::kByte);
    for (size_t b = 0; b < starts.size(); ++b) {
      std::copy_n(stream.data() + starts[b], length, bytes[static_cast<int64_t>(b)].data_ptr<uint8_t>());
    }
    bytes = bytes.to(at::kLong).to(device);
    total_bits += models::total_bits(model->forward(bytes), bytes);
    result.bytes += static_cast<int64_t>(starts.size() * length);
    result.windows += static_cast<int64_t>(starts.size());
  }
  if (was_training) model->train();
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

  const bool was_training = model->is_training();
  model->eval();
  at::NoGradGuard no_grad;
  const at::Device device = model->parameters().front().device();
  double total_bits = 0;
  for (size_t i = 0; i < plan.size();) {
    if (cancel && cancel->load()) break;
    const size_t count = std::min(plan.size() - i, static_cast<size_t>(std::max<int64_t>(1, batch)));
    at::Tensor bytes = at::empty({static_cast<int64_t>(count), static_cast<int64_t>(length)}, at::kByte);
    for (size_t b = 0; b < count; ++b) {
      std::copy_n(stream.data() + plan[i + b].start, length, bytes[static_cast<int64_t>(b)].data_ptr<uint8_t>());
    }
    bytes = bytes.to(at::kLong).to(device);
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
  if (was_training) model->train();
  result.bits_per_byte = result.bytes > 0 ? total_bits / static_cast<double>(result.bytes) : std::nan("");
  return result;
}

}  // namespace stx::engine
