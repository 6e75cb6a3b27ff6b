// The linear-prediction expert's step on CUDA (stx/kernels/linear_expert.h): one thread block of 256
// threads per sample. predict: the threads share the taps' products and the errors (block sums in double),
// then each takes one byte's bin and a stripe of the embedding row; push: one thread a sample.
#include "cuda/cuda_common.cuh"
#include "expert_rule.h"

namespace stx::kernels::detail {
namespace {

constexpr int kExpertThreads = 256;

// The sum of every thread's `value` over the block, returned to every thread.
__device__ double block_sum(double value, double* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kExpertThreads / 32; ++w) total += scratch[w];
  return total;
}

__global__ void __launch_bounds__(kExpertThreads) predict_kernel(ExpertStepParams p) {
  __shared__ double scratch[kExpertThreads / 32];
  const int64_t b = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t c = p.counts[b];
  const double* x = p.history + b * (p.order + p.capacity) + p.order;
  const double* a = p.coefficients + b * p.order;
  double partial = 0.0;
  for (int64_t k = t; k < p.order; k += kExpertThreads) partial += a[k] * x[c - 1 - k];
  const double mean = expert::clamp_d(block_sum(partial, scratch), -1.0, 1.0);
  partial = 0.0;
  for (int64_t k = t; k < p.scale_window; k += kExpertThreads) partial += p.errors[b * p.scale_window + k];
  const double scale =
      expert::scale_of(p, block_sum(partial, scratch), c < p.scale_window ? c : p.scale_window);
  const expert::Prediction pred = expert::prediction_of(p, mean, scale);
  if (t == 0) {
    p.mean[b] = mean;
    p.scale[b] = scale;
    p.predicted[b] = pred.byte;
    p.feature[b] = pred.feature;
  }
  p.log_probs[b * 256 + t] = expert::log_prob(p, t, mean, pred.spread);
  const float* e = p.byte_embedding + pred.byte * p.d;
  for (int64_t i = t; i < p.d; i += kExpertThreads) {
    p.embedding_rows[b * p.d + i] = __fadd_rn(e[i], __fmul_rn(pred.feature, p.scale_map[i]));
  }
}

__global__ void push_kernel(ExpertStepParams p) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= p.batch) return;
  const int64_t c = p.counts[b], byte = p.bytes[b];
  if (c < 0 || c >= p.capacity || byte < 0 || byte > 255) return;  // the decoder keeps both in range
  const double x = p.amplitudes[byte];
  p.errors[b * p.scale_window + c % p.scale_window] = fabs(x - p.mean[b]);
  p.history[b * (p.order + p.capacity) + p.order + c] = x;
  p.counts[b] = c + 1;
}

}  // namespace

void linear_expert_predict_cuda(const ExpertStepParams& p) {
  STX_KERNEL_CHECK(p.batch <= 2147483647, "CUDA linear expert: too many samples");
  predict_kernel<<<static_cast<unsigned>(p.batch), kExpertThreads, 0, static_cast<cudaStream_t>(p.stream)>>>(
      p);
  STX_CUDA_CHECK(cudaGetLastError());
}

void linear_expert_push_cuda(const ExpertStepParams& p) {
  const unsigned blocks = static_cast<unsigned>((p.batch + 127) / 128);
  push_kernel<<<blocks, 128, 0, static_cast<cudaStream_t>(p.stream)>>>(p);
  STX_CUDA_CHECK(cudaGetLastError());
}

}  // namespace stx::kernels::detail
