// The reshape route (reshape_attention.h): parts computed by one fused-attention call each, merged by
// log-sum-exp.
#include "stx/models/reshape_attention.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace stx {
namespace {

using kernels::HeadPattern;
using kernels::Pattern;

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// The fused calls that return the log-sum-exp with these arguments (memory-efficient attention's mask, the
// CPU flash kernel's mask) are those of LibTorch 2.3 and later.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define STX_FUSED_ATTENTION_WITH_LSE 1
#endif

// One call's result: out [.., L, D] and its natural log-sum-exp [.., L] in fp32; a row that attends
// nothing has lse -inf and out 0.
struct Part {
  at::Tensor out, lse;
};

// The matmul route: exact, differentiable in out and lse, and what LibTorch 1.13 can do. bias: [L, S]
// additive (0 or -inf), or undefined.
[[maybe_unused]] Part math_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                    const at::Tensor& bias) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor s = at::matmul(q.to(at::kFloat) * scale, k.to(at::kFloat).transpose(-2, -1));
  if (causal) {
    const at::Tensor upper = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu_(1);
    s = s.masked_fill(upper, kMinusInfinity);
  }
  if (bias.defined()) s = s + bias.to(at::kFloat);
  Part part;
  part.lse = at::logsumexp(s, -1);
  part.out = at::matmul(at::exp(s - part.lse.unsqueeze(-1)), v.to(at::kFloat)).to(q.scalar_type());
  return part;
}

#ifdef STX_FUSED_ATTENTION_WITH_LSE
bool flash_on_cuda(const at::Tensor& q) {
  return q.is_cuda() && (q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16);
}

// Memory-efficient attention wants its mask as [B, H, L, S] of q's dtype with S a multiple of 16 (its
// loads are aligned): keys past S are zeros the mask hides.
Part efficient_attention(const at::Tensor& q, at::Tensor k, at::Tensor v, bool causal, at::Tensor bias) {
  if (bias.defined()) {
    const int64_t s = k.size(-2), padded = (s + 15) / 16 * 16;
    if (padded != s) {
      k = at::constant_pad_nd(k, {0, 0, 0, padded - s});
      v = at::constant_pad_nd(v, {0, 0, 0, padded - s});
      bias = at::constant_pad_nd(bias, {0, padded - s}, kMinusInfinity);
    }
    bias = bias.to(q.scalar_type()).expand({q.size(0), q.size(1), q.size(2), padded});
  }
  auto result = at::_scaled_dot_product_efficient_attention(q, k, v, bias, /*compute_log_sumexp=*/true,
                                                            /*dropout_p=*/0.0, causal);
  // Its log-sum-exp has room for a multiple of 32 rows.
  return {std::get<0>(result), std::get<1>(result).narrow(-1, 0, q.size(-2))};
}
#endif

Part fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                     const at::Tensor& bias = {}) {
#ifdef STX_FUSED_ATTENTION_WITH_LSE
  if (q.is_cuda()) {
    if (!bias.defined() && flash_on_cuda(q)) {
      auto result = at::_scaled_dot_product_flash_attention(q, k, v, /*dropout_p=*/0.0, causal);
      return {std::get<0>(result), std::get<1>(result)};
    }
    return efficient_attention(q, k, v, causal, bias);
  }
  std::optional<at::Tensor> mask;  // as [B, H, L, S], the shape every LibTorch release's CPU kernel takes
  if (bias.defined()) mask = bias.to(q.scalar_type()).expand({q.size(0), q.size(1), q.size(2), k.size(2)});
  auto result = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, /*dropout_p=*/0.0, causal, mask);
  return {std::get<0>(result), std::get<1>(result).reshape({q.size(0), q.size(1), q.size(2)})};
#else
  return math_attention(q, k, v, causal, bias);
#endif
}

// A part computed for rows `first`.. of a [B, H, N] sequence, padded in front to all N rows as rows that
// attend nothing.
Part padded_in_front(Part p, int64_t first) {
  if (first == 0) return p;
  p.out = at::constant_pad_nd(p.out, {0, 0, first, 0});
  p.lse = at::constant_pad_nd(p.lse, {first, 0}, kMinusInfinity);
  return p;
}

// softmax over the union of the parts' keys: lse = logsumexp_p lse_p, out = sum_p exp(lse_p - lse) out_p.
at::Tensor merge(const std::vector<Part>& parts) {
  if (parts.size() == 1) return parts.front().out;
  std::vector<at::Tensor> lses;
  for (const Part& p : parts) lses.push_back(p.lse.to(at::kFloat));
  const at::Tensor lse = at::logsumexp(at::stack(lses), 0);
  at::Tensor out;
  for (const Part& p : parts) {
    const at::Tensor weighted = at::exp(p.lse.to(at::kFloat) - lse).unsqueeze(-1) * p.out.to(at::kFloat);
    out = out.defined() ? out + weighted : weighted;
  }
  return out.to(parts.front().out.scalar_type());
}

// [B, H, N, D] with N = R l, viewed as R rows of l.
struct Rows {
  int64_t batch, heads, rows, l, dim;
  at::Tensor as_rows(const at::Tensor& x) const { return x.reshape({batch, heads, rows, l, dim}); }
  at::Tensor flat_out(const at::Tensor& out, int64_t first_row) const {
    return out.reshape({batch, heads, (rows - first_row) * l, dim});
  }
  at::Tensor flat_lse(const at::Tensor& lse, int64_t first_row) const {
    return lse.reshape({batch, heads, (rows - first_row) * l});
  }
};

// Each row's queries against its own row's keys, causal: A1 of fixed, and the band's own-row half.
Part own_row(const Rows& g, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const auto fold = [&](const at::Tensor& x) {
    return g.as_rows(x).reshape({g.batch, g.heads * g.rows, g.l, g.dim});
  };
  Part p = fused_attention(fold(q), fold(k), fold(v), /*causal=*/true);
  return {g.flat_out(p.out, 0), g.flat_lse(p.lse, 0)};
}

// Row r's query a against row r-1's keys a..l-1: the band's other half. Reversing both rows turns
// "key offset >= query offset" into "key <= query".
Part previous_row(const Rows& g, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t r = g.rows - 1;
  const auto fold = [&](const at::Tensor& x, int64_t first) {
    return g.as_rows(x).narrow(2, first, r).flip({3}).reshape({g.batch, g.heads * r, g.l, g.dim});
  };
  Part p = fused_attention(fold(q, 1), fold(k, 0), fold(v, 0), /*causal=*/true);
  p.out = p.out.reshape({g.batch, g.heads, r, g.l, g.dim}).flip({3});
  p.lse = p.lse.reshape({g.batch, g.heads, r, g.l}).flip({3});
  return padded_in_front({g.flat_out(p.out, 1), g.flat_lse(p.lse, 1)}, g.l);
}

// The strided columns before the band: in the transposed view [B, H, l, R, D] query row r takes key
// rows 0..r-2, i.e. rows 2.. against rows ..R-3, causal.
Part columns(const Rows& g, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t r = g.rows - 2;
  const auto fold = [&](const at::Tensor& x, int64_t first) {
    return g.as_rows(x).transpose(2, 3).narrow(3, first, r).reshape({g.batch, g.heads * g.l, r, g.dim});
  };
  Part p = fused_attention(fold(q, 2), fold(k, 0), fold(v, 0), /*causal=*/true);
  at::Tensor out = at::constant_pad_nd(p.out.reshape({g.batch, g.heads, g.l, r, g.dim}), {0, 0, 2, 0});
  at::Tensor lse = at::constant_pad_nd(p.lse.reshape({g.batch, g.heads, g.l, r}), {2, 0}, kMinusInfinity);
  return {out.transpose(2, 3).reshape({g.batch, g.heads, g.rows * g.l, g.dim}),
          lse.transpose(2, 3).reshape({g.batch, g.heads, g.rows * g.l})};
}

// The fixed pattern's summary cells [l - c - o, l - o) of rows 0..R-2, gathered, against the queries of
// rows 1..R-1: query row r sees the cells of rows before it.
Part summaries(const Rows& g, const HeadPattern& p, const at::Tensor& q, const at::Tensor& k,
               const at::Tensor& v) {
  const int64_t r = g.rows - 1, c = p.summary, first_cell = g.l - p.summary - p.summary_offset;
  const auto gather = [&](const at::Tensor& x) {
    return g.as_rows(x).narrow(2, 0, r).narrow(3, first_cell, c).reshape({g.batch, g.heads, r * c, g.dim});
  };
  const at::Tensor queries = g.as_rows(q).narrow(2, 1, r).reshape({g.batch, g.heads, r * g.l, g.dim});
  const at::Tensor query_row = at::arange(r * g.l, q.options().dtype(at::kLong)).div(g.l, "floor");
  const at::Tensor key_row = at::arange(r * c, q.options().dtype(at::kLong)).div(c, "floor");
  const at::Tensor bias = at::zeros({r * g.l, r * c}, q.options().dtype(at::kFloat))
                              .masked_fill(key_row.unsqueeze(0) > query_row.unsqueeze(1), kMinusInfinity);
  Part part = fused_attention(queries, gather(k), gather(v), /*causal=*/false, bias);
  return padded_in_front(part, g.l);
}

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const HeadPattern& p) {
  if (q.dim() != 4 || !q.sizes().equals(k.sizes()) || !q.sizes().equals(v.sizes()))
    throw std::invalid_argument("reshape route: q, k and v must be [B, H, T, D] of one shape");
  if (p.subset != kernels::Subset::both)
    throw std::invalid_argument("reshape route: only merged heads (A1 and A2 together) have a route");
  kernels::validate(p);
}

}  // namespace

at::Tensor reshape_route_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                   const HeadPattern& pattern) {
  check_inputs(q, k, v, pattern);
  if (pattern.pattern == Pattern::dense) return fused_attention(q, k, v, /*causal=*/true).out;
  const int64_t n = q.size(2), l = pattern.stride, rows = (n + l - 1) / l;
  const auto pad = [&](const at::Tensor& x) { return at::constant_pad_nd(x, {0, 0, 0, rows * l - n}); };
  const at::Tensor qp = pad(q), kp = pad(k), vp = pad(v);
  const Rows g{q.size(0), q.size(1), rows, l, q.size(3)};
  std::vector<Part> parts{own_row(g, qp, kp, vp)};
  if (pattern.pattern == Pattern::strided) {
    if (rows >= 2) parts.push_back(previous_row(g, qp, kp, vp));
    if (rows >= 3) parts.push_back(columns(g, qp, kp, vp));
  } else if (rows >= 2) {
    parts.push_back(summaries(g, pattern, qp, kp, vp));
  }
  return merge(parts).narrow(2, 0, n);
}

std::string reshape_route_kernel(const at::Tensor& q) {
#ifdef STX_FUSED_ATTENTION_WITH_LSE
  if (q.is_cuda()) return flash_on_cuda(q) ? "flash" : "efficient";
  return "cpu_flash";
#else
  (void)q;
  return "math";
#endif
}

}  // namespace stx
