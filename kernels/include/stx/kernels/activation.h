// The feed-forward activation of the paper (eq. 15's GELU, in its sigmoid form), fused:
//
//   forward:  out = x * sigmoid(1.702 x)
//   backward: dx  = dy * (s + 1.702 x s (1 - s)),  s = sigmoid(1.702 x)
//
// As separate LibTorch ops this is three passes forward and about six backward over the largest
// activation of a block (4 d_model wide); fused it is one pass each way.
//
// Usage (CPU, fp32 or bf16, contiguous):
//   stx::kernels::GeluParams p;
//   p.x = x; p.out = y; p.count = n;
//   stx::kernels::gelu_forward(p);
#pragma once

#include <cstdint>

#include "stx/kernels/attention.h"  // DType, Device

namespace stx::kernels {

struct GeluParams {
  const void* x = nullptr;         // count elements, contiguous: the activation's input
  const void* grad_out = nullptr;  // backward only: count elements, the gradient with respect to out
  void* out = nullptr;             // count elements, written: gelu(x) forward, the gradient of x backward
  int64_t count = 0;
  // float32 or bfloat16 on the CPU, also float16 on CUDA; the arithmetic is fp32. A bfloat16 result is
  // the fp32 result rounded to nearest even, the bits LibTorch's cast would give it.
  DType dtype = DType::f32;
  Device device = Device::cpu;
  void* stream = nullptr;          // cudaStream_t for Device::cuda; null is the default stream
};

// The slope inside the sigmoid: x * sigmoid(1.702 x) approximates x * Phi(x) (paper-notes.md, eq. 15).
constexpr float kGeluSigmoidSlope = 1.702f;

void gelu_forward(const GeluParams& p);
void gelu_backward(const GeluParams& p);

}  // namespace stx::kernels
