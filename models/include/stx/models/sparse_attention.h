// stx::sparse_attention: the kernels/ block-sparse attention as a LibTorch autograd op.
//
//   at::Tensor out = stx::sparse_attention(q, k, v, layout);   // q, k, v: [B, H, T, D]
//
// q, k and v may be any strided views whose last dimension is contiguous (the usual
// `qkv.view({B, T, 3, H, D})` slices transposed to [B, H, T, D] are passed without a copy). The output is
// a [B, H, T, D] view of a [B, T, H, D] buffer, so `out.transpose(1, 2).reshape({B, T, H * D})` is free.
// CPU tensors must be fp32; CUDA tensors may be fp32, fp16 or bf16 (fp32 accumulation).
// The backward recomputes the weights from the saved log-sum-exp, so no T x T matrix ever exists.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"

namespace stx {

at::Tensor sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::shared_ptr<const kernels::Layout> layout);

// The same op on a packed projection output qkv: [B, T, 3, H, D] (q, k, v = qkv[:, :, i] as [B, H, T, D]).
// Its gradient is one packed tensor, written by the kernel directly, which is what a model that
// projects q, k and v with one matmul wants.
at::Tensor sparse_attention_packed(const at::Tensor& qkv, std::shared_ptr<const kernels::Layout> layout);

// One decoding step: the query at `position` ([B, H, D]) against caches [B, H, capacity, D] holding keys
// and values 0..position. Touches only the attended set of `position`; returns [B, H, D]. No autograd.
// When `lse` is given it receives the [B, H] log-sum-exp (the attention probe needs it for the weights).
at::Tensor sparse_attention_decode(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                                   int64_t position, const std::vector<kernels::HeadPattern>& patterns,
                                   at::Tensor* lse = nullptr);

}  // namespace stx
