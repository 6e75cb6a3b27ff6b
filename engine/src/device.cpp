#include "stx/engine/device.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "stx/engine/error.h"
#include "stx/kernels/attention.h"

namespace stx::engine {

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

std::string resolve_device_name(const std::string& asked) {
  if (asked == "cpu") return "cpu";
  if (asked != "cuda" && asked != "auto") {
    throw Error("the device must be cpu, cuda or auto, not '" + asked + "'", {"device"});
  }
  if (cuda_available()) return "cuda";
  if (asked == "auto") return "cpu";
  throw Error("the device cuda cannot be used: " + cuda_unavailable_reason() + "; choose the cpu", {"device"});
}

std::string resolve_generation_device(const std::string& asked) {
  return asked == "auto" ? "cpu" : resolve_device_name(asked);
}

std::string device_description(const std::string& resolved) {
  if (resolved != "cuda") return "CPU";
  const std::string name = kernels::cuda_device_name(0);
  return name.empty() ? "CUDA" : "CUDA: " + name;
}

}  // namespace stx::engine
