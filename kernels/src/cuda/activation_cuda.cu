// The fused activation on CUDA (see stx/kernels/activation.h): one grid-stride pass, fp32 arithmetic
// for every storage dtype.
#include "cuda_common.cuh"
#include "stx/kernels/activation.h"

namespace stx::kernels::detail {
namespace {

__device__ __forceinline__ float sigmoid_of_slope(float x) {
  return 1.0f / (1.0f + __expf(-kGeluSigmoidSlope * x));  // __expf(+large) = inf gives exactly 0
}

template <class T>
__global__ void gelu_kernel(const T* __restrict__ x, const T* __restrict__ grad_out, T* __restrict__ out,
                            int64_t count, bool backward) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const float xv = load_float(x + i);
    const float s = sigmoid_of_slope(xv);
    const float y = backward ? load_float(grad_out + i) * (s + kGeluSigmoidSlope * xv * s * (1.0f - s)) : xv * s;
    store_float(out + i, y);
  }
}

}  // namespace

void gelu_cuda(const GeluParams& p, bool backward) {
  dispatch_dtype(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kBlock = 256;
    const int64_t blocks = std::min<int64_t>((p.count + kBlock - 1) / kBlock, int64_t{65535} * 8);
    gelu_kernel<T><<<static_cast<unsigned>(blocks), kBlock, 0, static_cast<cudaStream_t>(p.stream)>>>(
        static_cast<const T*>(p.x), static_cast<const T*>(p.grad_out), static_cast<T*>(p.out), p.count, backward);
    STX_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace stx::kernels::detail
