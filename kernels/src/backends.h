// Private to stx_kernels: the backends behind the checked entry points in attention.cpp.
// Every function here may assume its params passed the checks of attention.cpp.
#pragma once

#include "stx/kernels/activation.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/fused_linear.h"
#include "stx/kernels/linear_expert.h"
#include "stx/kernels/sampling.h"
#include "stx/kernels/small_linear.h"

namespace stx::kernels::detail {

// Throws Error unless `device` and `dtype` are a pair this build can run: the CPU kernels take float32.
void check_device(const char* op, Device device, DType dtype);

// One CPU backend per instruction set, all compiled from src/cpu/cpu_kernels_impl.h and the *_cpu_impl.h
// files included after it (decode, activation, small linear).
#define STX_DECLARE_CPU_BACKEND(ns)                 \
  namespace ns {                                    \
  void forward(const ForwardParams& p);             \
  void backward(const BackwardParams& p);           \
  void decode(const DecodeParams& p);               \
  void gelu(const GeluParams& p, bool backward);    \
  void small_linear(const SmallLinearParams& p);    \
  std::pair<int64_t, int64_t> small_linear_columns(int64_t out, int part, int parts); \
  void to_half(const float* src, uint16_t* dst, int64_t count);   \
  void from_half(const uint16_t* src, float* dst, int64_t count); \
  }
STX_DECLARE_CPU_BACKEND(cpu_portable)
STX_DECLARE_CPU_BACKEND(cpu_avx2)
STX_DECLARE_CPU_BACKEND(cpu_avx512)
#undef STX_DECLARE_CPU_BACKEND

// An entry point's CPU half: returns what the active instruction set's backend returns. STX_RUN_ON_CPU(forward, p)
// calls cpu_avx512::forward(p), cpu_avx2::forward(p) or cpu_portable::forward(p).
#define STX_RUN_ON_CPU(function, ...)                                                               \
  switch (::stx::kernels::active_cpu_isa()) {                                                       \
    case ::stx::kernels::CpuIsa::avx512: return ::stx::kernels::detail::cpu_avx512::function(__VA_ARGS__); \
    case ::stx::kernels::CpuIsa::avx2: return ::stx::kernels::detail::cpu_avx2::function(__VA_ARGS__);     \
    case ::stx::kernels::CpuIsa::portable: return ::stx::kernels::detail::cpu_portable::function(__VA_ARGS__); \
  }

// The same with CUDA first: STX_RUN_ON_DEVICE(p.device, forward_cuda, forward, p) returns forward_cuda(p) for a
// CUDA device (in a build with CUDA), the CPU backend's forward(p) otherwise.
#ifdef STX_WITH_CUDA
#define STX_RUN_ON_DEVICE(device, cuda_function, cpu_function, ...)                                       \
  if ((device) == ::stx::kernels::Device::cuda) return ::stx::kernels::detail::cuda_function(__VA_ARGS__); \
  STX_RUN_ON_CPU(cpu_function, __VA_ARGS__)
#else
#define STX_RUN_ON_DEVICE(device, cuda_function, cpu_function, ...) STX_RUN_ON_CPU(cpu_function, __VA_ARGS__)
#endif

#ifdef STX_WITH_CUDA
void forward_cuda(const ForwardParams& p);
void backward_cuda(const BackwardParams& p);
void decode_cuda(const DecodeParams& p);
void gelu_cuda(const GeluParams& p, bool backward);
void draw_bytes_cuda(const DrawParams& p);
void linear_expert_predict_cuda(const ExpertStepParams& p);
void linear_expert_push_cuda(const ExpertStepParams& p);
void fused_linear_cuda(const FusedLinearParams& p);
int cuda_device_count();  // 0 when no driver or no device; never throws
std::string cuda_device_name(int index);  // "" when there is no such device; never throws
int64_t cuda_captured_nodes(void* stream);  // -1 when not capturing; never throws
#endif

}  // namespace stx::kernels::detail
