// Where generation runs, and why: the device the user named, or for Automatic the faster one, measured.
//
//   stx::engine::GenerationDevice d = stx::engine::choose_generation_device(model, request);
//   // d.kind: DeviceKind::cpu or cuda; d.reason: "" when asked by name, else for example
//   // "automatic, measured A vs B bytes/s (CPU vs CUDA, 1 sample)" with A and B the two rates
//
// Automatic on a machine without a usable CUDA device is the CPU, saying why. With one, it times a few
// decoding steps of this model at this batch on each device, halfway through the length asked for, as the
// sampler runs them (the CPU decoder; on CUDA, blocks of steps drawn on the device), keeps the faster, and remembers the choice for the rest of the
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

// The probe itself, for each device of `kinds` (choose_generation_device measures the CPU and CUDA): the
// model's decoder for the request's batch at probe_position, timed by choose_faster. A device whose probe
// fails (out of memory, say) leaves the CPU, with the reason.
GenerationDevice measure_generation_devices(models::SparseTransformer& model, const SampleRequest& request,
                                            const std::vector<DeviceKind>& kinds);

// The measurement, apart from the models: each candidate's `run(steps)` decodes up to that many steps and
// returns how many it did (fewer near the end of its capacity). Each is run once for `warmup` steps
// (untimed), then timed over `steps`; the one with the most steps per second wins (the first on a tie). Its
// reason names the rates in bytes per second (steps x batch).
struct ProbeCandidate {
  DeviceKind kind = DeviceKind::cpu;
  std::function<int(int steps)> run;
};
GenerationDevice choose_faster(const std::vector<ProbeCandidate>& candidates, int warmup, int steps,
                               int64_t batch);

}  // namespace stx::engine
