// Automatic's device for generation (generation_device.h): a short timed run of the model's decoder on each
// device, remembered per model and batch.
#include "stx/engine/generation_device.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "stx/engine/tensor_sampler.h"
#include "stx/models/token_decoder.h"
#include "stx/models/torch_decoder.h"
#include "torch_device.h"

namespace stx::engine {
namespace {

// Steps each device decodes before it is timed (caches, the first launches), and then while timed: enough
// to average over a device block of the sampler's (32 steps), short enough to go unnoticed.
constexpr int kWarmupSteps = 8;
constexpr int kTimedSteps = 64;

const char* kind_name(DeviceKind kind) { return kind == DeviceKind::cuda ? "CUDA" : "CPU"; }

// 8900.4 -> "8,900".
std::string grouped(double x) {
  std::string digits = std::to_string(static_cast<long long>(x + 0.5));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

// A decoder of the model on `device` for the request's batch, stepped as the sampler steps it there.
ProbeCandidate candidate(models::SparseTransformer& model, const SampleRequest& request, DeviceKind kind,
                         std::shared_ptr<models::TokenDecoder>& keep) {
  const int64_t capacity = std::min<int64_t>(model->config().context, kWarmupSteps + kTimedSteps + 1);
  keep = models::make_decoder(model, request.count, capacity,
                              request.half_precision_cache ? kernels::DType::f16 : kernels::DType::f32,
                              torch_device(kind));
  models::TokenDecoder* decoder = keep.get();
  auto* on_device = kind == DeviceKind::cuda && request.stop_strings.empty()
                        ? dynamic_cast<models::TorchDecoder*>(decoder)
                        : nullptr;
  const int64_t batch = request.count;
  const SamplingSettings settings = request.settings;
  return ProbeCandidate{
      kind, [decoder, on_device, batch, settings](int steps) {
        steps = static_cast<int>(std::min<int64_t>(steps, decoder->capacity() - decoder->position()));
        if (on_device != nullptr) {  // the sampler's blocks drawn on the device
          const at::Device device = on_device->device();
          const at::Tensor first = at::full({batch}, 256, at::kLong).to(device);
          const at::Tensor uniforms = at::rand({steps, batch}, at::kDouble).to(device);
          decode_steps_on_device(*on_device, first, settings, uniforms).cpu();
          return;
        }
        std::vector<int32_t> inputs(static_cast<size_t>(batch), 256);
        std::vector<float> logits(static_cast<size_t>(batch) * 256);
        for (int s = 0; s < steps; ++s) decoder->step(inputs.data(), logits.data());
      }};
}

GenerationDevice measure(models::SparseTransformer& model, const SampleRequest& request) {
  std::shared_ptr<models::TokenDecoder> cpu_decoder, cuda_decoder;
  std::vector<ProbeCandidate> candidates{candidate(model, request, DeviceKind::cpu, cpu_decoder)};
  try {
    candidates.push_back(candidate(model, request, DeviceKind::cuda, cuda_decoder));
    return choose_faster(candidates, kWarmupSteps, kTimedSteps, request.count);
  } catch (const c10::Error& e) {  // out of device memory, say: generation stays on the CPU
    const std::string what = e.what_without_backtrace();
    return {DeviceKind::cpu, "automatic, as CUDA failed its probe: " + what.substr(0, what.find('\n'))};
  }
}

}  // namespace

GenerationDevice choose_faster(const std::vector<ProbeCandidate>& candidates, int warmup, int steps,
                               int64_t batch) {
  GenerationDevice best;
  double best_rate = -1.0;
  std::string rates, kinds;
  for (const ProbeCandidate& c : candidates) {
    c.run(warmup);
    const auto start = std::chrono::steady_clock::now();
    c.run(steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(steps * batch) / std::max(seconds, 1e-9);
    if (rate > best_rate) {
      best_rate = rate;
      best.kind = c.kind;
    }
    rates += (rates.empty() ? "" : " vs ") + grouped(rate);
    kinds += (kinds.empty() ? "" : " vs ") + std::string(kind_name(c.kind));
  }
  best.reason = "automatic, measured " + rates + " bytes/s (" + kinds + ", " + std::to_string(batch) +
                (batch == 1 ? " sample)" : " samples)");
  return best;
}

GenerationDevice choose_generation_device(models::SparseTransformer& model, const SampleRequest& request) {
  if (request.device != DeviceChoice::automatic) return {resolve_generation_device(request.device), ""};
  if (!cuda_available()) return {DeviceKind::cpu, "automatic, as " + cuda_unavailable_reason()};
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int64_t, bool>, GenerationDevice> remembered;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key =
      std::make_tuple(static_cast<const void*>(model.get()), request.count, request.half_precision_cache);
  const auto found = remembered.find(key);
  if (found != remembered.end()) return found->second;
  return remembered[key] = measure(model, request);
}

}  // namespace stx::engine
