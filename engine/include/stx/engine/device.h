// Where a job runs. Front ends turn the user's word ("auto", "cpu", "cuda") into a DeviceChoice once, at the
// edge (parse_device_choice); jobs resolve it here, so that training, sampling and the studio say the same
// thing about the same machine. Torch-free, so that the studio's widgets can show it; the torch device is
// built in one place (engine/src/torch_device.h).
#pragma once

#include <string>
#include <string_view>

namespace stx::engine {

// What the user asked for. automatic: the GPU for training when there is one, the CPU for generation.
enum class DeviceChoice { automatic, cpu, cuda };
// Where a job runs.
enum class DeviceKind { cpu, cuda };

// "auto", "cpu" or "cuda" as a DeviceChoice; anything else is an Error about the setting "device".
DeviceChoice parse_device_choice(std::string_view name);
// The word parse_device_choice reads: "auto", "cpu" or "cuda".
const char* to_string(DeviceChoice choice);

// True when this build's LibTorch has CUDA and a CUDA device is present.
bool cuda_available();
// Why not, in plain words ("this build has no CUDA kernels"); empty when cuda_available().
std::string cuda_unavailable_reason();

// Where training runs for `asked`: automatic is CUDA when cuda_available(). Throws Error (about the setting
// "device") for cuda with no device, saying to use the cpu.
DeviceKind resolve_training_device(DeviceChoice asked);

// Where generation runs for `asked`, before a model is at hand: as resolve_training_device, except that
// automatic is the CPU. With the model, Automatic measures both devices instead (choose_generation_device in
// generation_device.h): a step of our CUDA decoder is dozens of small kernel launches whatever the batch, so
// which is faster depends on the model, the batch and the machine (docs/benchmarks.md, "On a GPU").
DeviceKind resolve_generation_device(DeviceChoice asked);

// The GPU a process trains on among `device_count` (at least 1): data-parallel rank r takes GPU r mod count,
// so that processes on one machine spread over its GPUs; a single process (rank 0) and sampling take GPU 0.
int cuda_device_index(int rank, int device_count);

// For people: "CPU" or "CUDA: NVIDIA H100 80GB HBM3" (the name of GPU `index`).
std::string device_description(DeviceKind kind, int index = 0);

}  // namespace stx::engine
