#include "stx/engine/device.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <algorithm>

#include "stx/engine/error.h"
#include "stx/kernels/attention.h"
#include "torch_device.h"

namespace stx::engine {

DeviceChoice parse_device_choice(std::string_view name) {
  if (name == "auto") return DeviceChoice::automatic;
  if (name == "cpu") return DeviceChoice::cpu;
  if (name == "cuda") return DeviceChoice::cuda;
  throw Error("the device must be cpu, cuda or auto, not '" + std::string(name) + "'", {"device"});
}

const char* to_string(DeviceChoice choice) {
  switch (choice) {
    case DeviceChoice::automatic: return "auto";
    case DeviceChoice::cpu: return "cpu";
    case DeviceChoice::cuda: return "cuda";
  }
  return "auto";
}

bool cuda_available() {
  // Both: LibTorch must be able to place tensors there, and our kernels must have been compiled for it.
  return torch::cuda::is_available() && kernels::cuda_device_available();
}

std::string cuda_unavailable_reason() {
  if (!kernels::built_with_cuda()) return "this build has no CUDA kernels";
  if (!at::hasCUDA()) return "this build's LibTorch was built without CUDA";
  if (!torch::cuda::is_available()) return "no CUDA device is available (none present, or no driver for it)";
  if (!kernels::cuda_device_available()) return "no CUDA device was found";
  return "";
}

DeviceKind resolve_training_device(DeviceChoice asked) {
  if (asked == DeviceChoice::cpu) return DeviceKind::cpu;
  if (cuda_available()) return DeviceKind::cuda;
  if (asked == DeviceChoice::automatic) return DeviceKind::cpu;
  throw Error("the device cuda cannot be used: " + cuda_unavailable_reason() + "; choose the cpu", {"device"});
}

DeviceKind resolve_generation_device(DeviceChoice asked) {
  return asked == DeviceChoice::automatic ? DeviceKind::cpu : resolve_training_device(asked);
}

int cuda_device_index(int rank, int device_count) { return std::max(rank, 0) % std::max(device_count, 1); }

std::string device_description(DeviceKind kind, int index) {
  if (kind != DeviceKind::cuda) return "CPU";
  const std::string name = kernels::cuda_device_name(index);
  return name.empty() ? "CUDA" : "CUDA: " + name;
}

c10::Device torch_device(DeviceKind kind, int rank) {
  if (kind != DeviceKind::cuda) return at::Device(at::kCPU);
  const int count = static_cast<int>(torch::cuda::device_count());
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(cuda_device_index(rank, count)));
}

}  // namespace stx::engine
