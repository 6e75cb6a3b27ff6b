#include "reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stx::test {
namespace {

using stx::kernels::HeadPattern;

// Rows below which the reference runs on one thread.
constexpr int64_t kRowsWorthThreads = 4096;

// Four running sums: with one, each addition waits for the previous one. The reference is most of the
// kernel tests' time, and a quarter of it is here.
double dot(const double* a, const double* b, int64_t d) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t x = 0;
  for (; x + 4 <= d; x += 4) {
    s0 += a[x] * b[x];
    s1 += a[x + 1] * b[x + 1];
    s2 += a[x + 2] * b[x + 2];
    s3 += a[x + 3] * b[x + 3];
  }
  for (; x < d; ++x) s0 += a[x] * b[x];
  return (s0 + s1) + (s2 + s3);
}

// The attended keys of row i, found by testing every j <= i against the element-level mask.
// O(i) per row on purpose: the reference must not reuse the sparse set builders it helps to check.
void masked_keys(const HeadPattern& pattern, int64_t i, std::vector<int64_t>& keys) {
  keys.clear();
  for (int64_t j = 0; j <= i; ++j)
    if (stx::kernels::attends(pattern, i, j)) keys.push_back(j);
}

// One query row i of one head, given its attended keys. s: scratch for the scores.
double forward_row(const std::vector<int64_t>& keys, int64_t i, int64_t head_dim, double scale,
                   const double* q_head, const double* k_head, const double* v_head, double* out_row,
                   std::vector<double>& s) {
  for (int64_t x = 0; x < head_dim; ++x) out_row[x] = 0.0;
  if (keys.empty()) return -std::numeric_limits<double>::infinity();

  // s_ij = scale * q_i . k_j for j in A(i); m = max_j s_ij keeps exp() in range.
  const double* q_i = q_head + i * head_dim;
  s.resize(keys.size());
  double m = -std::numeric_limits<double>::infinity();
  for (size_t e = 0; e < keys.size(); ++e) {
    s[e] = scale * dot(q_i, k_head + keys[e] * head_dim, head_dim);
    m = std::max(m, s[e]);
  }
  // sum = sum_j exp(s_ij - m);  out_i = sum_j exp(s_ij - m) / sum * v_j;  lse_i = m + log sum
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - m));
  for (size_t e = 0; e < keys.size(); ++e) {
    const double p = s[e] / sum;
    const double* v_j = v_head + keys[e] * head_dim;
    for (int64_t x = 0; x < head_dim; ++x) out_row[x] += p * v_j[x];
  }
  return m + std::log(sum);
}

}  // namespace

double ReferenceShape::resolved_scale() const {
  return scale > 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

double reference_forward_row(const HeadPattern& pattern, int64_t i, int64_t head_dim, double scale,
                             const double* q_head, const double* k_head, const double* v_head,
                             double* out_row) {
  std::vector<int64_t> keys;
  std::vector<double> s;
  masked_keys(pattern, i, keys);
  return forward_row(keys, i, head_dim, scale, q_head, k_head, v_head, out_row, s);
}

void reference_forward(const std::vector<HeadPattern>& patterns, const ReferenceShape& shape,
                       const std::vector<double>& q, const std::vector<double>& k,
                       const std::vector<double>& v, std::vector<double>& out, std::vector<double>& lse) {
  const int64_t T = shape.seq_len, D = shape.head_dim;
  const double scale = shape.resolved_scale();
  out.assign(static_cast<size_t>(shape.elements()), 0.0);
  lse.assign(static_cast<size_t>(shape.rows()), 0.0);
  // Rows are independent, so threads take them in turn; small cases stay on one thread, where starting and
  // joining the others would cost more than the rows.
#pragma omp parallel if (shape.rows() >= kRowsWorthThreads)
  {
    std::vector<int64_t> keys;
    std::vector<double> s;
#pragma omp for collapse(2) schedule(dynamic, 16)
    for (int64_t h = 0; h < shape.heads; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        masked_keys(patterns[h], i, keys);  // the same for every batch entry
        for (int64_t b = 0; b < shape.batch; ++b) {
          const int64_t head = (b * shape.heads + h) * T;  // first row of this (b, h)
          lse[head + i] = forward_row(keys, i, D, scale, &q[head * D], &k[head * D], &v[head * D],
                                      &out[(head + i) * D], s);
        }
      }
    }
  }
}

void reference_backward(const std::vector<HeadPattern>& patterns, const ReferenceShape& shape,
                        const std::vector<double>& q, const std::vector<double>& k,
                        const std::vector<double>& v, const std::vector<double>& out,
                        const std::vector<double>& lse, const std::vector<double>& dout,
                        std::vector<double>& dq, std::vector<double>& dk, std::vector<double>& dv) {
  const int64_t T = shape.seq_len, D = shape.head_dim;
  const double scale = shape.resolved_scale();
  dq.assign(static_cast<size_t>(shape.elements()), 0.0);
  dk.assign(static_cast<size_t>(shape.elements()), 0.0);
  dv.assign(static_cast<size_t>(shape.elements()), 0.0);
  // Threads take rows in turn. A row's dq is its own, but dk and dv gather from many rows: each thread sums
  // its rows' share in its own copy, and the copies are added at the end.
#pragma omp parallel if (shape.rows() >= kRowsWorthThreads)
  {
    std::vector<double> dk_part(dk.size(), 0.0), dv_part(dv.size(), 0.0);
    std::vector<int64_t> keys;
#pragma omp for collapse(2) schedule(dynamic, 16)
    for (int64_t h = 0; h < shape.heads; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        masked_keys(patterns[h], i, keys);  // the same for every batch entry
        if (keys.empty()) continue;         // an empty row has no probabilities, so it adds no gradient
        for (int64_t b = 0; b < shape.batch; ++b) {
          const int64_t head = (b * shape.heads + h) * T;  // first row of this (b, h)
          const double* qh = &q[head * D];
          const double* kh = &k[head * D];
          const double* vh = &v[head * D];
          double* dq_i = &dq[(head + i) * D];
          double* dkh = &dk_part[head * D];
          double* dvh = &dv_part[head * D];
          const double* q_i = qh + i * D;
          const double* dout_i = &dout[(head + i) * D];
          // With P_ij = exp(s_ij - lse_i) and out_i = sum_j P_ij v_j:
          //   dv_j  += P_ij dout_i
          //   dP_ij  = dout_i . v_j
          //   dS_ij  = P_ij (dP_ij - delta_i),  delta_i = sum_j P_ij dP_ij = dout_i . out_i
          //   dq_i  += scale dS_ij k_j,   dk_j += scale dS_ij q_i
          const double delta = dot(dout_i, &out[(head + i) * D], D);
          for (int64_t j : keys) {
            const double* k_j = kh + j * D;
            const double* v_j = vh + j * D;
            const double p = std::exp(scale * dot(q_i, k_j, D) - lse[head + i]);
            const double ds = p * (dot(dout_i, v_j, D) - delta);
            // One loop per output: the compiler cannot tell that they do not overlap, so a joint loop
            // would stay scalar.
            for (int64_t x = 0; x < D; ++x) dvh[j * D + x] += p * dout_i[x];
            for (int64_t x = 0; x < D; ++x) dq_i[x] += scale * ds * k_j[x];
            for (int64_t x = 0; x < D; ++x) dkh[j * D + x] += scale * ds * q_i[x];
          }
        }
      }
    }
#pragma omp critical
    for (size_t e = 0; e < dk.size(); ++e) {
      dk[e] += dk_part[e];
      dv[e] += dv_part[e];
    }
  }
}

}  // namespace stx::test
