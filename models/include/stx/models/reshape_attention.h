// The "reshape" route to the Sparse Transformer's merged heads: the attention stx::sparse_attention
// computes when every head attends A1 ∪ A2, done instead as dense fused-attention calls on reshaped views
// of q, k and v, merged by their log-sum-exp. It is what a LibTorch user can write without our kernels,
// so `stx-bench attention` times it as the peer to beat, and the tests use it as a second, independent
// computation of the patterns.
//
//   at::Tensor out = stx::reshape_route_attention(q, k, v, stx::kernels::HeadPattern::strided(128));
//
// q, k, v: [B, H, T, D], any strides; T is padded to a multiple of l inside (padding is never attended by
// a real query, every part being causal). With R = T / l rows of l:
//   strided  own row, causal           [B, H*R, l, D]
//            previous row              query offset a takes keys a..l-1 of the row before: with both
//                                      rows reversed that is causal
//            columns                   the transposed view [B, H*l, R, D], query row r against key rows
//                                      0..r-2 (r-1 and r are the band's): causal on rows 2.. vs ..R-3
//   fixed    own row, causal; the summary cells of the rows before, gathered into [B, H, (R-1) c, D],
//            against rows 1.. with a block-causal mask
//   dense    one causal call
//
// The fused call is, by what this LibTorch offers: CUDA fp16/bf16 unmasked, flash attention; other CUDA
// calls, memory-efficient attention (which takes a mask); CPU on LibTorch 2.1+, its flash kernel; else
// (LibTorch 1.13) explicit matmuls and logsumexp. LibTorch's fused kernels give no gradient through their
// log-sum-exp, so on them the backward is autograd's through each call with the merge weights held fixed:
// the same work as the exact backward, not its value. The math route's backward is exact.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "stx/kernels/pattern.h"

namespace stx {

// Throws std::invalid_argument for a pattern it has no route for (a subset other than both) or a shape
// that is not [B, H, T, D] with q, k and v alike.
at::Tensor reshape_route_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const kernels::HeadPattern& pattern);

// The fused call the route makes for an unmasked part on tensors like q: "flash", "efficient",
// "cpu_flash" or "math".
std::string reshape_route_kernel(const at::Tensor& q);

}  // namespace stx
