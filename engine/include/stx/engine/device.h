// Where a job runs. Front ends name a device "cpu", "cuda" or "auto"; jobs resolve the name here, so that
// training, sampling and the studio say the same thing about the same machine. Torch-free, so that the
// studio's widgets can show it.
#pragma once

#include <string>

namespace stx::engine {

// True when this build's LibTorch has CUDA and a CUDA device is present.
bool cuda_available();
// Why not, in plain words ("this build has no CUDA kernels"); empty when cuda_available().
std::string cuda_unavailable_reason();

// "cpu" or "cuda": what `asked` ("cpu", "cuda" or "auto") runs on here. "auto" is "cuda" when
// cuda_available(). Throws Error (about the setting "device") for "cuda" with no device, saying to use the
// cpu, and for any other name.
std::string resolve_device_name(const std::string& asked);

// Where generation runs for `asked`: as resolve_device_name, except that "auto" is the CPU. Generating is one
// step per byte, and a step of our CUDA decoder is some sixty small kernel launches whatever the batch: on an
// H100 it decoded one audio sample at 688 samples/s and four at 3,260, where the CPU decoder runs one at about
// 9,000 on two cores (docs/benchmarks.md, "On a GPU"). "cuda" still runs there when asked.
std::string resolve_generation_device(const std::string& asked);

// For people: "CPU" or "CUDA: NVIDIA H100 80GB HBM3".
std::string device_description(const std::string& resolved);

}  // namespace stx::engine
