// The naive reference for sparse causal attention, in double precision. Test-only.
//
// It masks a dense computation with stx::kernels::attends(p, i, j), so it shares nothing with the
// block layouts or the fused kernels that it checks. Plain loops over rows, which threads share out
// (OpenMP) on the larger cases.
//
// All tensors here are contiguous row-major doubles:
//   q, k, v, out, dout, dq, dk, dv: [batch, heads, seq_len, head_dim]
//   lse:                            [batch, heads, seq_len]
//
// A row whose attended set is empty (the fixed pattern's A2 alone, before the first summary cell)
// gets out = 0 and lse = -infinity: the softmax sum over no keys is 0 and log 0 = -inf.
#pragma once

#include <cstdint>
#include <vector>

#include "stx/kernels/pattern.h"

namespace stx::test {

struct ReferenceShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t seq_len = 0;
  int64_t head_dim = 0;
  double scale = 0.0;  // softmax scale; 0 means 1/sqrt(head_dim), as in the kernels

  double resolved_scale() const;
  int64_t elements() const { return batch * heads * seq_len * head_dim; }
  int64_t rows() const { return batch * heads * seq_len; }
};

// One query row i of one head. q_head, k_head, v_head: [seq_len, head_dim] of that head.
// Writes out_row[head_dim] and returns lse_i.
double reference_forward_row(const stx::kernels::HeadPattern& pattern, int64_t i, int64_t head_dim,
                             double scale, const double* q_head, const double* k_head, const double* v_head,
                             double* out_row);

// The whole forward: out and lse for every batch, head and row; patterns has one entry per head.
void reference_forward(const std::vector<stx::kernels::HeadPattern>& patterns, const ReferenceShape& shape,
                       const std::vector<double>& q, const std::vector<double>& k,
                       const std::vector<double>& v, std::vector<double>& out, std::vector<double>& lse);

// The backward: dq, dk, dv from dout, recomputing the probabilities from q, k and the given lse.
void reference_backward(const std::vector<stx::kernels::HeadPattern>& patterns, const ReferenceShape& shape,
                        const std::vector<double>& q, const std::vector<double>& k,
                        const std::vector<double>& v, const std::vector<double>& out,
                        const std::vector<double>& lse, const std::vector<double>& dout,
                        std::vector<double>& dq, std::vector<double>& dk, std::vector<double>& dv);

}  // namespace stx::test
