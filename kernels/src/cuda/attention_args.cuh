// The arguments of the attention kernels (the scalar forward_cuda.cu and backward_cuda.cu, the tensor-core
// forward_tc_cuda.cu and backward_tc_cuda.cu), filled once from the checked params, and how a backward pass
// adds its part of a gradient to the earlier parts'.
#pragma once

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace stx::kernels::detail {

// Every row of a [batch, heads, seq, dim] tensor of 16-bit values starts on 16 bytes: the tensor-core kernels
// may copy its rows 16 bytes at a time (with dim a multiple of 8).
inline bool rows_aligned(const void* data, const Strides& s) {
  return reinterpret_cast<uintptr_t>(data) % 16 == 0 && s.batch % 8 == 0 && s.head % 8 == 0 && s.seq % 8 == 0;
}

// What every attention kernel reads: q, k, v [batch, heads, n, dim] and the layout.
template <class T>
struct AttentionArgs {
  const T* q;
  const T* k;
  const T* v;
  Strides q_stride, k_stride, v_stride;
  int64_t heads, n;
  int dim;
  float scale;
  // The rows of q, k, v (and of dO, for the backward) start 16-byte aligned and dim is a multiple of 8: the
  // tensor-core kernels copy them 16 bytes at a time.
  bool vector_loads;
  const DevicePart* parts;
  const WorkItem* items;  // set per slot by launch_slots
};

// The forward's or the backward's params (their q, k, v, shapes and scale) into `a`.
template <class T, class Params>
void fill_attention_args(AttentionArgs<T>& a, const Params& p, const DeviceLayout& layout) {
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.q_stride = p.q_stride;
  a.k_stride = p.k_stride;
  a.v_stride = p.v_stride;
  a.heads = p.heads;
  a.n = p.seq_len;
  a.dim = static_cast<int>(p.head_dim);
  a.scale = p.scale;
  a.parts = layout.parts;
  a.vector_loads = p.head_dim % 8 == 0 && rows_aligned(p.q, p.q_stride) && rows_aligned(p.k, p.k_stride) &&
                   rows_aligned(p.v, p.v_stride);
}

// ---- the forward ------------------------------------------------------------------------------------

template <class T>
struct ForwardArgs : AttentionArgs<T> {
  T* out;          // [batch, heads, n, dim], written by the head's last part
  float* lse;      // [batch, heads, n]: each part's launch leaves the running log-sum-exp here
  float* partial;  // [batch, heads, n, dim] fp32: the running output between parts (out itself for fp32)
  Strides out_stride, partial_stride;
};

template <class T>
ForwardArgs<T> forward_args(const ForwardParams& p, const DeviceLayout& layout, float* partial,
                            const Strides& partial_stride) {
  ForwardArgs<T> a{};
  fill_attention_args(a, p, layout);
  a.out = static_cast<T*>(p.out);
  a.lse = p.lse;
  a.partial = partial;
  a.out_stride = p.out_stride;
  a.partial_stride = partial_stride;
  return a;
}

// ---- the backward -----------------------------------------------------------------------------------

template <class T>
struct BackwardArgs : AttentionArgs<T> {
  const T* dout;       // [batch, heads, n, dim]
  const float* lse;    // [batch, heads, n], the forward's final log-sum-exp
  const float* delta;  // [batch, heads, n], dO_i . O_i
  T* grad_a;           // dK (key pass) or dQ (query pass), [batch, heads, n, dim]
  T* grad_b;           // dV (key pass), unused by the query pass
  float* partial_a;    // fp32 running sums between parts (grad_a itself for fp32)
  float* partial_b;
  Strides dout_stride, grad_a_stride, grad_b_stride, partial_a_stride, partial_b_stride;
};

// fp16/bf16 gradients of a head with several parts are summed in fp32 first: room for dK and dV (the query
// pass reuses the first half), or null where the gradients themselves (fp32) or nothing (one part) hold it.
struct BackwardScratch {
  float* data = nullptr;
};

template <class T>
BackwardArgs<T> backward_args(const BackwardParams& p, const DeviceLayout& layout, const float* delta) {
  BackwardArgs<T> a{};
  fill_attention_args(a, p, layout);
  a.dout = static_cast<const T*>(p.dout);
  a.lse = p.lse;
  a.delta = delta;
  a.dout_stride = p.dout_stride;
  a.vector_loads = a.vector_loads && rows_aligned(p.dout, p.dout_stride);
  return a;
}

// Pass 1 writes dK (grad_a) and dV (grad_b); their running sums live in the gradients for fp32, else in the
// scratch.
template <class T>
void set_key_pass(BackwardArgs<T>& a, const BackwardParams& p, const BackwardScratch& scratch) {
  const Strides contiguous = Strides::contiguous(p.heads, p.seq_len, p.head_dim);
  const int64_t elements = p.batch * p.heads * p.seq_len * p.head_dim;
  a.grad_a = static_cast<T*>(p.dk);
  a.grad_b = static_cast<T*>(p.dv);
  a.grad_a_stride = p.dk_stride;
  a.grad_b_stride = p.dv_stride;
  a.partial_a = scratch.data ? scratch.data : static_cast<float*>(p.dk);
  a.partial_b = scratch.data ? scratch.data + elements : static_cast<float*>(p.dv);
  a.partial_a_stride = scratch.data ? contiguous : p.dk_stride;
  a.partial_b_stride = scratch.data ? contiguous : p.dv_stride;
}

// Pass 2 writes dQ (grad_a). Stream order makes pass 1 finish first, so its scratch can be reused.
template <class T>
void set_query_pass(BackwardArgs<T>& a, const BackwardParams& p, const BackwardScratch& scratch) {
  a.grad_a = static_cast<T*>(p.dq);
  a.grad_b = nullptr;
  a.grad_a_stride = p.dq_stride;
  a.partial_a = scratch.data ? scratch.data : static_cast<float*>(p.dq);
  a.partial_b = nullptr;
  a.partial_a_stride = scratch.data ? Strides::contiguous(p.heads, p.seq_len, p.head_dim) : p.dq_stride;
}

// Adds `value` to the fp32 running sum of earlier parts (if any), then stores it: in the dtype for the
// head's last part, else back to the running sum. Only the calling thread touches this element.
template <class T>
__device__ __forceinline__ void finish(float value, int32_t flags, float* partial, T* grad) {
  if (!(flags & kFirstPart)) value += *partial;
  if (flags & kLastPart) {
    store_float(grad, value);
  } else {
    *partial = value;
  }
}

// The tensor-core passes (backward_tc_cuda.cu): whether they take these params (tensor_cores_usable and
// head_dim <= 128), and both passes, after the Delta kernel.
bool tensor_core_backward_applies(const BackwardParams& p);
void backward_tc_cuda(const BackwardParams& p, const DeviceLayout& layout, const float* delta,
                      const BackwardScratch& scratch);

}  // namespace stx::kernels::detail
