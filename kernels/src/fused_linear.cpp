// The checked entry point of fused_linear (stx/kernels/fused_linear.h) and its CPU loop; the CUDA kernel is
// cuda/fused_linear_cuda.cu.
#include "stx/kernels/fused_linear.h"

#include <cmath>
#include <string>
#include <vector>

#include "backends.h"
#include "stx/kernels/activation.h"

namespace stx::kernels {
namespace {

void fused_linear_cpu(const FusedLinearParams& p) {
  std::vector<float> n(static_cast<size_t>(p.in));
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.x_stride;
    if (p.gamma != nullptr) {
      double sum = 0.0, squares = 0.0;
      for (int64_t i = 0; i < p.in; ++i) sum += x[i];
      const double mean = sum / static_cast<double>(p.in);
      for (int64_t i = 0; i < p.in; ++i) squares += (x[i] - mean) * (x[i] - mean);
      const float rstd = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(p.in) + p.eps));
      for (int64_t i = 0; i < p.in; ++i) {
        n[static_cast<size_t>(i)] = (x[i] - static_cast<float>(mean)) * rstd * p.gamma[i] + p.beta[i];
      }
    } else {
      for (int64_t i = 0; i < p.in; ++i) n[static_cast<size_t>(i)] = x[i];
    }
    for (int64_t c = 0; c < p.out; ++c) {
      const float* w = p.weight + c * p.in;
      float dot = 0.0f;
      for (int64_t i = 0; i < p.in; ++i) dot += n[static_cast<size_t>(i)] * w[i];
      float v = dot + (p.bias != nullptr ? p.bias[c] : 0.0f);
      if (p.activation == Activation::gelu) v = v / (1.0f + std::exp(-kGeluSigmoidSlope * v));
      if (p.residual != nullptr) v += p.residual[r * p.y_stride + c];
      p.y[r * p.y_stride + c] = v;
    }
  }
}

}  // namespace

void fused_linear(const FusedLinearParams& p_in) {
  const std::string op = "fused linear";
  STX_KERNEL_CHECK(p_in.rows >= 0 && p_in.in >= 1 && p_in.out >= 1,
                   op + ": expected rows >= 0, in >= 1 and out >= 1, got rows " + std::to_string(p_in.rows) +
                       ", in " + std::to_string(p_in.in) + ", out " + std::to_string(p_in.out));
  if (p_in.rows == 0) return;
  STX_KERNEL_CHECK(p_in.x && p_in.weight && p_in.y, op + ": x, weight and y must not be null");
  STX_KERNEL_CHECK((p_in.gamma == nullptr) == (p_in.beta == nullptr),
                   op + ": give gamma and beta, or neither");
  STX_KERNEL_CHECK(p_in.in <= kFusedLinearMaxIn, op + ": at most " + std::to_string(kFusedLinearMaxIn) +
                                                     " inputs, got " + std::to_string(p_in.in));
  STX_KERNEL_CHECK(p_in.eps > 0.0f, op + ": eps must be > 0");
  FusedLinearParams p = p_in;
  if (p.x_stride == 0) p.x_stride = p.in;
  if (p.y_stride == 0) p.y_stride = p.out;
  STX_KERNEL_CHECK(p.x_stride >= p.in && p.y_stride >= p.out,
                   op + ": row strides must be at least the row lengths");
#ifdef STX_WITH_CUDA
  if (p.device == Device::cuda) return detail::fused_linear_cuda(p);
#endif
  STX_KERNEL_CHECK(p.device == Device::cpu,
                   op + ": a CUDA pointer was given, but stx_kernels was built without CUDA");
  fused_linear_cpu(p);
}

}  // namespace stx::kernels
