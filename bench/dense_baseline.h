// The LibTorch side of stx-bench: dense causal attention, the sgemm roofline and LibTorch's threads.
// This header is torch-free; only dense_baseline.cpp includes ATen. LibTorch errors leave it as
// std::runtime_error carrying the message without the backtrace.
//
// Dense causal attention, batched over [batch, heads] as a LibTorch user would write it:
//   s   = (q * scale) @ k^T                      // [B, H, T, T]; scaling q is the same maths, T*D not T*T work
//   s   = s.masked_fill_(upper triangle, -inf)  // the causal mask, built once per T outside the timing
//   p   = softmax(s, -1)
//   out = p @ v                                  // [B, H, T, D]
// Backward, explicit (default): dv = p^T @ dout; dp = dout @ v^T; ds = p * (dp - rowsum(dout * out));
//   dq = ds @ k * scale; dk = ds^T @ (q * scale). Backward, autograd: q, k, v require grad and
//   (out * dout).sum().backward() runs through the same four ops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "stx/kernels/pattern.h"

namespace stx::bench {

enum class DenseBackward { explicit_matmul, autograd };
const char* to_string(DenseBackward mode);

struct DenseShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t seq_len = 0;
  int64_t head_dim = 0;
};

// The bytes the dense baseline holds at its peak: its T x T temporaries over all batch x heads
// (forward: s and p; explicit backward: p and dp; autograd backward: p, dp, ds and the masked
// gradient) plus the bool mask.
int64_t dense_peak_bytes_estimate(const DenseShape& shape, bool backward, DenseBackward mode);

// Dense causal attention over caller-owned fp32 inputs of shape [batch, heads, seq_len, head_dim],
// contiguous; the inputs are wrapped, not copied, so dense and sparse read the same numbers.
class DenseAttention {
 public:
  DenseAttention(const DenseShape& shape, const float* q, const float* k, const float* v, const float* dout,
                 DenseBackward mode);
  ~DenseAttention();
  DenseAttention(const DenseAttention&) = delete;
  DenseAttention& operator=(const DenseAttention&) = delete;

  void forward();
  void forward_backward();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The reshape route (stx/models/reshape_attention.h) over the same caller-owned inputs, every head with
// `pattern` (merged): LibTorch fused calls, or on LibTorch 1.13 matmuls, on reshaped views merged by
// log-sum-exp. forward_backward is autograd's backward with `dout`.
class ReshapeRouteAttention {
 public:
  ReshapeRouteAttention(const DenseShape& shape, const float* q, const float* k, const float* v,
                        const float* dout, const kernels::HeadPattern& pattern);
  ~ReshapeRouteAttention();
  ReshapeRouteAttention(const ReshapeRouteAttention&) = delete;
  ReshapeRouteAttention& operator=(const ReshapeRouteAttention&) = delete;

  void forward();
  void forward_backward();
  std::string kernel() const;  // "math" on LibTorch 1.13, "cpu_flash" on 2.3 and later

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The bytes the reshape route's matmul form holds at its peak: the score matrices of its parts (own row,
// previous row and columns for strided; own row and the gathered summaries for fixed), three copies
// forward (scores, masked, weights) and five with the backward's graph.
int64_t reshape_route_peak_bytes_estimate(const DenseShape& shape, const kernels::HeadPattern& pattern,
                                          bool backward);

// LibTorch's intra-op threads.
void set_torch_threads(int threads);
int torch_threads();

// fp32 sgemm GFLOP/s of at::mm on size x size x size: warm-up once, median of `repeats`.
double measure_sgemm_gflops(int64_t size, int repeats);

}  // namespace stx::bench
