// draw_bytes on CUDA (stx/kernels/sampling.h): one thread block of 256 threads per row. Each thread takes
// one byte: its logit, its rank (when the rule ranks) and its probability; thread 0 then walks the ranks
// with draw_rule.h's sums, in the CPU's order, so that both devices draw the same byte.
#include "cuda/cuda_common.cuh"
#include "draw_rule.h"

namespace stx::kernels::detail {
namespace {

__global__ void __launch_bounds__(256) draw_kernel(DrawParams p) {
  __shared__ float logits[256];
  __shared__ double prob[256];
  __shared__ int order[256];
  __shared__ int best;
  const int64_t row = blockIdx.x;
  const int i = static_cast<int>(threadIdx.x);
  const int64_t at = row * p.logits_stride + i;
  // The product of experts without contraction into a fused multiply-add: the host's float rounding.
  logits[i] = p.mix_log_probs == nullptr ? p.logits[at]
                                         : __fadd_rn(__fmul_rn(*p.network_weight, p.logits[at]),
                                                     __fmul_rn(*p.expert_weight, p.mix_log_probs[at]));
  __syncthreads();
  if (i == 0) best = draw::first_maximum(logits);
  __syncthreads();
  if (p.temperature == 0.0) {
    if (i == 0) p.bytes[row] = best;
    return;
  }
  const int r = draw::ranked(p) ? draw::rank_of(logits, i) : i;
  order[r] = i;
  prob[r] = draw::probability_of(p, logits[i], static_cast<double>(logits[best]));
  __syncthreads();
  if (i == 0) p.bytes[row] = draw::walk(p, prob, order, p.uniforms[row]);
}

}  // namespace

void draw_bytes_cuda(const DrawParams& p) {
  STX_KERNEL_CHECK(p.rows <= 2147483647, "CUDA draw bytes: too many rows");
  draw_kernel<<<static_cast<unsigned>(p.rows), 256, 0, static_cast<cudaStream_t>(p.stream)>>>(p);
  STX_CUDA_CHECK(cudaGetLastError());
}

}  // namespace stx::kernels::detail
