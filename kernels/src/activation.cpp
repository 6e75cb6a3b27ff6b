// Checked entry points of the fused activation (bodies in cpu/activation_cpu_impl.h and
// cuda/activation_cuda.cu) and of the small linear product of decoding (cpu/small_linear_cpu_impl.h).
#include "stx/kernels/activation.h"
#include "stx/kernels/small_linear.h"

#include <string>

#include "backends.h"

namespace stx::kernels {
namespace {

void check(const char* op, const GeluParams& p, bool backward) {
  if (p.device == Device::cpu) {
    STX_KERNEL_CHECK(p.dtype == DType::f32 || p.dtype == DType::bf16,
                     std::string(op) + ": the CPU takes float32 or bfloat16, got " + to_string(p.dtype));
  } else {
    detail::check_device(op, p.device, p.dtype);
  }
  STX_KERNEL_CHECK(p.count >= 0, std::string(op) + ": expected count >= 0, got " + std::to_string(p.count));
  if (p.count == 0) return;
  STX_KERNEL_CHECK(p.x != nullptr, std::string(op) + ": x is null");
  STX_KERNEL_CHECK(p.out != nullptr, std::string(op) + ": out is null");
  if (backward) STX_KERNEL_CHECK(p.grad_out != nullptr, std::string(op) + ": grad_out is null");
}

void run_gelu(const char* op, const GeluParams& p, bool backward) {
  check(op, p, backward);
  if (p.count == 0) return;
  STX_RUN_ON_DEVICE(p.device, gelu_cuda, gelu, p, backward)
}

}  // namespace

void gelu_forward(const GeluParams& p) { run_gelu("gelu forward", p, false); }

void gelu_backward(const GeluParams& p) { run_gelu("gelu backward", p, true); }

}  // namespace stx::kernels

namespace stx::kernels {

void small_linear(const SmallLinearParams& p_in) {
  const char* op = "small linear";
  STX_KERNEL_CHECK(p_in.rows >= 0 && p_in.in >= 1 && p_in.out >= 1,
                   std::string(op) + ": expected rows >= 0, in >= 1 and out >= 1, got rows " +
                       std::to_string(p_in.rows) + ", in " + std::to_string(p_in.in) + ", out " +
                       std::to_string(p_in.out));
  if (p_in.rows == 0) return;
  STX_KERNEL_CHECK(p_in.x && p_in.weights && p_in.y, std::string(op) + ": x, weights and y must not be null");
  STX_KERNEL_CHECK(p_in.weight_dtype == DType::f32 || p_in.weight_dtype == DType::f16,
                   std::string(op) + ": weights must be f32 or f16, got " + to_string(p_in.weight_dtype));
  SmallLinearParams p = p_in;
  if (p.x_stride == 0) p.x_stride = p.in;
  if (p.y_stride == 0) p.y_stride = p.out;
  STX_KERNEL_CHECK(p.x_stride >= p.in && p.y_stride >= p.out,
                   std::string(op) + ": row strides must be at least the row lengths");
  STX_KERNEL_CHECK(p.parts >= 1 && p.part >= 0 && p.part < p.parts,
                   std::string(op) + ": expected 0 <= part < parts, got part " + std::to_string(p.part) +
                       " of " + std::to_string(p.parts));
  STX_RUN_ON_CPU(small_linear, p)
}

namespace {
template <class T>
void pack_panels(const T* w, int64_t in, int64_t out, T* dst) {
  STX_KERNEL_CHECK(w && dst && in >= 1 && out >= 1,
                   "pack weight panels: expected weights, a destination, in >= 1 and out >= 1, got in " +
                       std::to_string(in) + ", out " + std::to_string(out));
  for (int64_t first = 0; first < out; first += kWeightPanel) {
    for (int64_t i = 0; i < in; ++i) {
      for (int64_t c = first; c < first + kWeightPanel; ++c) *dst++ = c < out ? w[i * out + c] : T{0};
    }
  }
}
}  // namespace

void pack_weight_panels(const float* w, int64_t in, int64_t out, float* dst) { pack_panels(w, in, out, dst); }
void pack_weight_panels(const uint16_t* w, int64_t in, int64_t out, uint16_t* dst) {
  pack_panels(w, in, out, dst);
}

std::pair<int64_t, int64_t> small_linear_columns(int64_t out, int part, int parts) {
  STX_KERNEL_CHECK(out >= 1 && parts >= 1 && part >= 0 && part < parts,
                   "small linear columns: expected out >= 1 and 0 <= part < parts, got out " + std::to_string(out) +
                       ", part " + std::to_string(part) + " of " + std::to_string(parts));
  STX_RUN_ON_CPU(small_linear_columns, out, part, parts)
  return {0, out};
}

}  // namespace stx::kernels
