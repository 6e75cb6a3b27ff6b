// gelu_sigmoid as an autograd function over the fused kernel (stx/kernels/activation.h): one pass
// forward, one backward, and only x saved. Tensors the kernels do not take (a CPU half tensor, say)
// go through the same formula in LibTorch ops.
#include <torch/csrc/autograd/custom_function.h>

#include "stx/kernels/activation.h"
#include "stx/models/sparse_transformer.h"
#include "torch_kernel_bridge.h"

namespace stx::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool kernel_takes(const at::Tensor& x) {
  if (x.is_cpu()) return x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16;
#ifdef STX_TORCH_CUDA
  if (x.is_cuda()) {
    const auto t = x.scalar_type();
    return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
  }
#endif
  return false;
}

at::Tensor run_kernel(const at::Tensor& x, const at::Tensor* grad_out) {
  const at::Tensor xc = x.contiguous();
  const at::Tensor gc = grad_out != nullptr ? grad_out->contiguous().to(x.scalar_type()) : at::Tensor();
  at::Tensor out = at::empty_like(xc);
  detail::DeviceScope scope(xc);
  kernels::GeluParams p;
  p.x = xc.data_ptr();
  p.grad_out = grad_out != nullptr ? gc.data_ptr() : nullptr;
  p.out = out.data_ptr();
  p.count = xc.numel();
  p.dtype = detail::kernel_dtype(xc);
  p.device = scope.device;
  p.stream = scope.stream;
  if (grad_out != nullptr) {
    kernels::gelu_backward(p);
  } else {
    kernels::gelu_forward(p);
  }
  return out;
}

class GeluFunction : public torch::autograd::Function<GeluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    ctx->save_for_backward({x});
    return run_kernel(x, nullptr);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    return {run_kernel(x, &grads[0])};
  }
};

}  // namespace

at::Tensor gelu_sigmoid(const at::Tensor& x) {
  if (!kernel_takes(x)) return x * at::sigmoid(kernels::kGeluSigmoidSlope * x);
  return GeluFunction::apply(x);
}

}  // namespace stx::models
