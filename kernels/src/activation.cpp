// Checked entry points of the fused activation; the bodies are in cpu/activation_cpu_impl.h and
// cuda/activation_cuda.cu.
#include "stx/kernels/activation.h"

#include <string>

#include "attention_impl.h"

namespace stx::kernels {
namespace {

void check(const char* op, const GeluParams& p, bool backward) {
  detail::check_device(op, p.device, p.dtype);
  STX_KERNEL_CHECK(p.count >= 0, std::string(op) + ": expected count >= 0, got " + std::to_string(p.count));
  if (p.count == 0) return;
  STX_KERNEL_CHECK(p.x != nullptr, std::string(op) + ": x is null");
  STX_KERNEL_CHECK(p.out != nullptr, std::string(op) + ": out is null");
  if (backward) STX_KERNEL_CHECK(p.grad_out != nullptr, std::string(op) + ": grad_out is null");
}

}  // namespace

void gelu_forward(const GeluParams& p) {
  check("gelu forward", p, false);
  if (p.count == 0) return;
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::gelu_cuda(p, false);
#endif
  switch (active_cpu_isa()) {
    case CpuIsa::avx512: return detail::cpu_avx512::gelu(p, false);
    case CpuIsa::avx2: return detail::cpu_avx2::gelu(p, false);
    case CpuIsa::portable: return detail::cpu_portable::gelu(p, false);
  }
}

void gelu_backward(const GeluParams& p) {
  check("gelu backward", p, true);
  if (p.count == 0) return;
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::gelu_cuda(p, true);
#endif
  switch (active_cpu_isa()) {
    case CpuIsa::avx512: return detail::cpu_avx512::gelu(p, true);
    case CpuIsa::avx2: return detail::cpu_avx2::gelu(p, true);
    case CpuIsa::portable: return detail::cpu_portable::gelu(p, true);
  }
}

}  // namespace stx::kernels
