// Where generation runs, and why: the device the user named, or for Automatic the faster one, measured.
//
//   stx::engine::GenerationDevice d = stx::engine::choose_generation_device(model, request);
//   // d.kind: DeviceKind::cpu or cuda; d.reason: "" when asked by name, else for example
//   // "automatic, measured A vs B bytes/s (CPU vs CUDA, 1 sample)" with A and B the two rates
//
// Automatic on a machine without a usable CUDA device is the CPU, saying why. With one, it times a few
// decoding steps of this model at this batch on each device, as the sampler runs them (the CPU decoder; on
// CUDA, blocks of steps drawn on the device), keeps the faster, and remembers the choice for the rest of the
// process (per model, batch and cache precision), so that only the first generation pays the probe (a
// fraction of a second, and the CUDA context's start, which the generation would pay anyway).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stx/engine/device.h"
#include "stx/engine/sample_request.h"
#include "stx/models/sparse_transformer.h"

namespace stx::engine {

struct GenerationDevice {
  DeviceKind kind = DeviceKind::cpu;
  std::string reason;  // for people; empty when the user named the device
};

// Throws Error (about the setting "device") for cuda on a machine without one, as resolve_generation_device.
GenerationDevice choose_generation_device(models::SparseTransformer& model, const SampleRequest& request);

// The measurement, apart from the models: each candidate's `run(steps)` decodes that many steps. Each is run
// once for `warmup` steps (untimed), then timed over `steps`; the one with the most steps per second wins
// (the first on a tie). Its reason names both rates in bytes per second (steps x batch).
struct ProbeCandidate {
  DeviceKind kind = DeviceKind::cpu;
  std::function<void(int steps)> run;
};
GenerationDevice choose_faster(const std::vector<ProbeCandidate>& candidates, int warmup, int steps,
                               int64_t batch);

}  // namespace stx::engine
