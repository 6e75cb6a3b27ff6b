// Automatic's device for generation (generation_device.h): a short timed run of the model's decoder on each
// device, remembered per model and batch.
#include "stx/engine/generation_device.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "stx/engine/tensor_sampler.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/device_expert.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/token_decoder.h"
#include "stx/models/torch_decoder.h"
#include "torch_device.h"

namespace stx::engine {
namespace {

// Steps each device decodes before it is timed (caches, the first launches), and then while timed: enough
// to average over a device block of the sampler's (32 steps), short enough to go unnoticed.
constexpr int kWarmupSteps = 8;
constexpr int kTimedSteps = 64;
// On CUDA the warm-up also draws what generation has drawn by then: a block to the alignment, an eager one
// and the one whose launches are captured as a graph (DeviceBlockDrawer), so the timed steps replay it.
constexpr int kBlock = 32;
constexpr int kGraphWarmupSteps = 3 * kBlock;
constexpr int kProbeSteps = kWarmupSteps + kGraphWarmupSteps + kTimedSteps + 1;

const char* kind_name(DeviceKind kind) { return kind == DeviceKind::cuda ? "CUDA" : "CPU"; }

// 8900.4 -> "8,900".
std::string grouped(double x) {
  std::string digits = std::to_string(static_cast<long long>(x + 0.5));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

// Where the probe times its steps: halfway through what the request generates (a step's cost grows with the
// position on the CPU, whose attention reads more keys, and hardly on the GPU, bound by its launches), with
// room for the warm-up and the timed steps before the end.
int64_t probe_position(const SampleRequest& request, int64_t capacity) {
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t middle = prompt + std::max<int64_t>(request.length - prompt, 0) / 2;
  return std::clamp<int64_t>(middle, 0, std::max<int64_t>(capacity - kProbeSteps, 0));
}

// A decoder of the model on `device` for the request's batch, moved to probe_position() (the positions before
// it skipped, not computed) and stepped as the sampler steps it there.
ProbeCandidate candidate(models::SparseTransformer& model, const SampleRequest& request, DeviceKind kind,
                         std::shared_ptr<models::TokenDecoder>& keep) {
  const int64_t capacity =
      std::min<int64_t>(model->config().context, std::max<int64_t>(request.length, kProbeSteps));
  const int64_t position = probe_position(request, capacity);
  const kernels::DType cache = request.half_precision_cache ? kernels::DType::f16 : kernels::DType::f32;
  std::unique_ptr<models::TokenDecoder> network;
  models::TorchDecoder* torch_decoder = nullptr;
  if (kind == DeviceKind::cpu) {
    auto cpu = std::make_unique<models::IncrementalDecoder>(model, request.count, capacity, cache);
    if (position > 0) models::skip_to_for_timing(*cpu, position);
    network = std::move(cpu);
  } else {
    auto gpu =
        std::make_unique<models::TorchDecoder>(model, request.count, capacity, cache, torch_device(kind));
    if (position > 0) gpu->skip_to_for_timing(position);
    torch_decoder = gpu.get();
    network = std::move(gpu);
  }
  keep = models::with_history_inputs(model, std::move(network));
  models::TokenDecoder* decoder = keep.get();
  const int64_t batch = request.count;
  const SamplingSettings settings = request.settings;
  // The sampler's blocks drawn on the device: on CUDA, the network alone or with the expert, and no stop
  // strings; the expert's state a tone up to the position (and its fit over it).
  auto* expert_decoder = dynamic_cast<models::ExpertDecoder*>(decoder);
  const bool on_device = torch_decoder != nullptr && request.stop_strings.empty() &&
                         (decoder == torch_decoder ||
                          (expert_decoder != nullptr && &expert_decoder->network() == torch_decoder));
  if (!on_device) {
    return ProbeCandidate{
        kind, [decoder, batch](int steps) {
          steps = static_cast<int>(std::min<int64_t>(steps, decoder->capacity() - decoder->position()));
          std::vector<int32_t> inputs(static_cast<size_t>(batch), 256);
          std::vector<float> logits(static_cast<size_t>(batch) * 256);
          for (int s = 0; s < steps; ++s) decoder->step(inputs.data(), logits.data());
          return std::max(steps, 0);
        }};
  }
  std::shared_ptr<models::DeviceLinearExpert> expert;
  if (expert_decoder != nullptr) {
    expert = std::make_shared<models::DeviceLinearExpert>(model, batch, capacity, torch_decoder->device());
    if (position > 0) {
      std::vector<uint8_t> tone(static_cast<size_t>(position));
      for (size_t i = 0; i < tone.size(); ++i)
        tone[i] = static_cast<uint8_t>(128 + 60 * std::sin(0.05 * static_cast<double>(i)));
      expert->fill_for_timing(tone.data(), position);
    }
  }
  auto drawer = std::make_shared<DeviceBlockDrawer>(*torch_decoder, settings, kBlock, expert.get());
  auto first = std::make_shared<at::Tensor>(at::full({batch}, 256, at::kLong).to(torch_decoder->device()));
  auto warmed = std::make_shared<bool>(false);
  return ProbeCandidate{
      kind, [torch_decoder, expert, drawer, first, warmed, batch](int steps) {  // expert: the drawer's, kept
        // The first call (the warm-up) goes on until the graph was tried; a timed call steps exactly `steps`.
        const bool warm_up = !*warmed;
        *warmed = true;
        int done = 0;
        while (done < steps || (warm_up && !drawer->capture_tried())) {
          int64_t n = drawer->next_block_steps(torch_decoder->capacity());
          if (!warm_up) n = std::min<int64_t>(n, steps - done);
          if (n <= 0) break;
          const at::Tensor uniforms = at::rand({n, batch}, at::kDouble).to(torch_decoder->device());
          const at::Tensor drawn = drawer->draw(*first, uniforms).cpu();  // read back a block at a time
          *first = drawn[n - 1].to(torch_decoder->device());
          done += static_cast<int>(n);
        }
        return done;
      }};
}

}  // namespace

GenerationDevice measure_generation_devices(models::SparseTransformer& model, const SampleRequest& request,
                                            const std::vector<DeviceKind>& kinds) {
  std::vector<std::shared_ptr<models::TokenDecoder>> decoders(kinds.size());
  std::vector<ProbeCandidate> candidates;
  try {
    for (size_t i = 0; i < kinds.size(); ++i)
      candidates.push_back(candidate(model, request, kinds[i], decoders[i]));
    return choose_faster(candidates, kWarmupSteps, kTimedSteps, request.count);
  } catch (const c10::Error& e) {  // out of device memory, say: generation stays on the CPU
    const std::string what = e.what_without_backtrace();
    return {DeviceKind::cpu, "automatic, as a device failed its probe: " + what.substr(0, what.find('\n'))};
  }
}

GenerationDevice choose_faster(const std::vector<ProbeCandidate>& candidates, int warmup, int steps,
                               int64_t batch) {
  GenerationDevice best;
  double best_rate = -1.0;
  std::string rates, kinds;
  for (const ProbeCandidate& c : candidates) {
    c.run(warmup);
    const auto start = std::chrono::steady_clock::now();
    const int done = c.run(steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(int64_t{done} * batch) / std::max(seconds, 1e-9);
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
  return remembered[key] = measure_generation_devices(model, request, {DeviceKind::cpu, DeviceKind::cuda});
}

}  // namespace stx::engine
