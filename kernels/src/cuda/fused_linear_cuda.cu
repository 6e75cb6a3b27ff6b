// fused_linear on CUDA (stx/kernels/fused_linear.h): a thread block of eight warps takes eight output
// columns, a warp each. Per chunk of up to eight rows the block normalises them into shared memory (each
// warp a row: mean and variance by warp sums), then each warp reads its column's weights once per chunk,
// coalesced along `in`, and dots them with every row of the chunk.
#include "cuda/cuda_common.cuh"
#include "stx/kernels/activation.h"
#include "stx/kernels/fused_linear.h"

namespace stx::kernels::detail {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kChunk = static_cast<int>(kFusedLinearRowChunk);

__device__ float warp_total(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) fused_linear_kernel(FusedLinearParams p) {
  __shared__ float rows_s[kChunk][kFusedLinearMaxIn];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  for (int64_t first = 0; first < p.rows; first += kChunk) {
    const int count = static_cast<int>(p.rows - first < kChunk ? p.rows - first : kChunk);
    __syncthreads();  // the previous chunk's rows are no longer read
    for (int r = warp; r < count; r += kWarpsPerBlock) {
      const float* x = p.x + (first + r) * p.x_stride;
      float mean = 0.0f, rstd = 1.0f;
      if (p.gamma != nullptr) {
        float sum = 0.0f;
        for (int64_t i = lane; i < p.in; i += 32) sum += x[i];
        mean = warp_total(sum) / static_cast<float>(p.in);
        float squares = 0.0f;
        for (int64_t i = lane; i < p.in; i += 32) squares += (x[i] - mean) * (x[i] - mean);
        rstd = rsqrtf(warp_total(squares) / static_cast<float>(p.in) + p.eps);
      }
      for (int64_t i = lane; i < p.in; i += 32) {
        rows_s[r][i] = p.gamma != nullptr ? (x[i] - mean) * rstd * p.gamma[i] + p.beta[i] : x[i];
      }
    }
    __syncthreads();
    if (column >= p.out) continue;
    const float* w = p.weight + column * p.in;
    float dots[kChunk];
#pragma unroll
    for (int r = 0; r < kChunk; ++r) dots[r] = 0.0f;
    for (int64_t i = lane; i < p.in; i += 32) {
      const float wi = w[i];
#pragma unroll
      for (int r = 0; r < kChunk; ++r) dots[r] += r < count ? rows_s[r][i] * wi : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kChunk; ++r) dots[r] = warp_total(dots[r]);
    if (lane < count) {
      float v = 0.0f;
#pragma unroll
      for (int r = 0; r < kChunk; ++r) v = r == lane ? dots[r] : v;  // lane r writes row r
      v += p.bias != nullptr ? p.bias[column] : 0.0f;
      if (p.activation == Activation::gelu) v = v / (1.0f + __expf(-kGeluSigmoidSlope * v));
      const int64_t at = (first + lane) * p.y_stride + column;
      if (p.residual != nullptr) v += p.residual[at];
      p.y[at] = v;
    }
  }
}

}  // namespace

void fused_linear_cuda(const FusedLinearParams& p) {
  const int64_t blocks = (p.out + kWarpsPerBlock - 1) / kWarpsPerBlock;
  STX_KERNEL_CHECK(blocks <= 2147483647, "CUDA fused linear: too many output columns");
  fused_linear_kernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0,
                        static_cast<cudaStream_t>(p.stream)>>>(p);
  STX_CUDA_CHECK(cudaGetLastError());
}

}  // namespace stx::kernels::detail
