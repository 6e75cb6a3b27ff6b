// Private to stx_kernels: the backends behind the checked entry points in attention.cpp.
// Every function here may assume its params passed the checks of attention.cpp.
#pragma once

#include "stx/kernels/activation.h"
#include "stx/kernels/attention.h"
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

#ifdef STX_WITH_CUDA
void forward_cuda(const ForwardParams& p);
void backward_cuda(const BackwardParams& p);
void decode_cuda(const DecodeParams& p);
void gelu_cuda(const GeluParams& p, bool backward);
int cuda_device_count();  // 0 when no driver or no device; never throws
std::string cuda_device_name(int index);  // "" when there is no such device; never throws
#endif

}  // namespace stx::kernels::detail
