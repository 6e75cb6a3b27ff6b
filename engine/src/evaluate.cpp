#include "stx/engine/evaluate.h"

#include <ATen/ATen.h>

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

}  // namespace stx::engine
