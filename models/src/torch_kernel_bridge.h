// Private to stx_models: what every op binding needs to hand a torch tensor to a kernel: its dtype in
// the kernels' terms, and the device and stream to run on.
#pragma once

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "stx/kernels/attention.h"

#ifdef STX_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace stx::detail {

inline kernels::DType kernel_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return kernels::DType::f32;
    case at::kHalf: return kernels::DType::f16;
    case at::kBFloat16: return kernels::DType::bf16;
    default:
      throw std::invalid_argument(std::string("stx op: unsupported dtype ") +
                                  std::string(c10::toString(t.scalar_type())) + " (expected float, half or bfloat16)");
  }
}

struct DeviceScope {
  kernels::Device device = kernels::Device::cpu;
  void* stream = nullptr;
#ifdef STX_TORCH_CUDA
  c10::optional<c10::cuda::CUDAGuard> guard;
#endif
  explicit DeviceScope(const at::Tensor& t) {
    if (t.is_cuda()) {
#ifdef STX_TORCH_CUDA
      guard.emplace(t.device());
      device = kernels::Device::cuda;
      stream = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
      TORCH_CHECK(false, "stx op: this build has no CUDA LibTorch");
#endif
    } else {
      TORCH_CHECK(t.is_cpu(), "stx op: tensors must be on the CPU or a CUDA device");
    }
  }
};

}  // namespace stx::detail
