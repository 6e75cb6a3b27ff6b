// The only file of stx-bench that includes LibTorch.
#include "dense_baseline.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard, at::AutoGradMode: not in ATen.h of LibTorch 2.x

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "stx/models/reshape_attention.h"
#include "timing.h"

namespace stx::bench {
namespace {

// Calls fn; a c10::Error leaves as std::runtime_error with its one-line message, not the backtrace.
template <class Fn>
auto guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string(what) + ": LibTorch: " + e.what_without_backtrace());
  }
}

at::Tensor wrap(const float* data, const DenseShape& s) {
  // from_blob needs a non-const pointer; the baseline never writes its inputs.
  return at::from_blob(const_cast<float*>(data), {s.batch, s.heads, s.seq_len, s.head_dim},
                       at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

const char* to_string(DenseBackward mode) {
  return mode == DenseBackward::autograd ? "autograd" : "explicit";
}

int64_t dense_peak_bytes_estimate(const DenseShape& s, bool backward, DenseBackward mode) {
  const int64_t scores = s.batch * s.heads * s.seq_len * s.seq_len * static_cast<int64_t>(sizeof(float));
  const int64_t mask = s.seq_len * s.seq_len;  // bool
  // s and p (forward), p and dp (explicit backward): 2, matching the measured peak growth at n=4096.
  // Autograd keeps p, dp, ds and the masked gradient around; 3.3 measured at n=2048, 4 budgeted.
  const int64_t temporaries = backward && mode == DenseBackward::autograd ? 4 : 2;
  return temporaries * scores + mask;
}

struct DenseAttention::Impl {
  DenseShape shape;
  DenseBackward mode;
  double scale;
  at::Tensor q, k, v, dout;  // views of the caller's buffers
  at::Tensor mask;           // [T, T] bool, true above the diagonal
  at::Tensor out, dq, dk, dv;

  // s = (q * scale) @ k^T, masked, softmax, @ v. Returns p for the explicit backward.
  at::Tensor forward(const at::Tensor& q_scaled) {
    at::Tensor s = at::matmul(q_scaled, k.transpose(-2, -1));
    s.masked_fill_(mask, -std::numeric_limits<float>::infinity());
    at::Tensor p = at::softmax(s, -1);
    s.reset();  // frees [B, H, T, T] before the second matmul
    out = at::matmul(p, v);
    return p;
  }

  void forward_backward_explicit() {
    const at::Tensor q_scaled = q * scale;
    at::Tensor p = forward(q_scaled);
    dv = at::matmul(p.transpose(-2, -1), dout);
    at::Tensor ds = at::matmul(dout, v.transpose(-2, -1));  // dp
    // Softmax backward in place: ds = p * (dp - rowsum(dout * out)). Masked entries have p = 0.
    ds.sub_((dout * out).sum(-1, /*keepdim=*/true)).mul_(p);
    p.reset();
    dq = at::matmul(ds, k).mul_(scale);
    dk = at::matmul(ds.transpose(-2, -1), q_scaled);
  }

  void forward_backward_autograd() {
    at::AutoGradMode grad_mode(true);  // whatever the caller's mode, this path needs the graph
    const at::Tensor qg = q.detach().requires_grad_(true);
    const at::Tensor kg = k.detach().requires_grad_(true);
    const at::Tensor vg = v.detach().requires_grad_(true);
    at::Tensor s = at::matmul(qg * scale, kg.transpose(-2, -1));
    s.masked_fill_(mask, -std::numeric_limits<float>::infinity());
    at::Tensor p = at::softmax(s, -1);
    s.reset();
    at::Tensor o = at::matmul(p, vg);
    p.reset();  // the graph keeps what it needs
    (o * dout).sum().backward();
    dq = qg.grad();
    dk = kg.grad();
    dv = vg.grad();
    out = o.detach();
  }
};

DenseAttention::DenseAttention(const DenseShape& shape, const float* q, const float* k, const float* v,
                               const float* dout, DenseBackward mode)
    : impl_(std::make_unique<Impl>()) {
  guarded("dense baseline setup", [&] {
    impl_->shape = shape;
    impl_->mode = mode;
    impl_->scale = 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
    impl_->q = wrap(q, shape);
    impl_->k = wrap(k, shape);
    impl_->v = wrap(v, shape);
    impl_->dout = wrap(dout, shape);
    impl_->mask = at::ones({shape.seq_len, shape.seq_len}, at::TensorOptions().dtype(at::kBool)).triu_(1);
  });
}

DenseAttention::~DenseAttention() = default;

void DenseAttention::forward() {
  guarded("dense forward", [&] {
    at::NoGradGuard no_grad;
    impl_->forward(impl_->q * impl_->scale);
  });
}

void DenseAttention::forward_backward() {
  guarded("dense forward+backward", [&] {
    if (impl_->mode == DenseBackward::autograd) {
      impl_->forward_backward_autograd();
    } else {
      at::NoGradGuard no_grad;
      impl_->forward_backward_explicit();
    }
  });
}

struct ReshapeRouteAttention::Impl {
  kernels::HeadPattern pattern;
  at::Tensor q, k, v, dout;  // views of the caller's buffers
  at::Tensor out;
};

ReshapeRouteAttention::ReshapeRouteAttention(const DenseShape& shape, const float* q, const float* k,
                                             const float* v, const float* dout,
                                             const kernels::HeadPattern& pattern)
    : impl_(std::make_unique<Impl>()) {
  impl_->pattern = pattern;
  impl_->q = wrap(q, shape);
  impl_->k = wrap(k, shape);
  impl_->v = wrap(v, shape);
  impl_->dout = wrap(dout, shape);
}

ReshapeRouteAttention::~ReshapeRouteAttention() = default;

void ReshapeRouteAttention::forward() {
  guarded("reshape route forward", [&] {
    at::NoGradGuard no_grad;
    impl_->out = reshape_route_attention(impl_->q, impl_->k, impl_->v, impl_->pattern);
  });
}

void ReshapeRouteAttention::forward_backward() {
  guarded("reshape route forward+backward", [&] {
    at::AutoGradMode grad_mode(true);
    const at::Tensor qg = impl_->q.detach().requires_grad_(true);
    const at::Tensor kg = impl_->k.detach().requires_grad_(true);
    const at::Tensor vg = impl_->v.detach().requires_grad_(true);
    const at::Tensor out = reshape_route_attention(qg, kg, vg, impl_->pattern);
    (out * impl_->dout).sum().backward();
    impl_->out = out.detach();
  });
}

std::string ReshapeRouteAttention::kernel() const { return reshape_route_kernel(impl_->q); }

int64_t reshape_route_peak_bytes_estimate(const DenseShape& s, const kernels::HeadPattern& p, bool backward) {
  const int64_t n = s.seq_len;
  int64_t scores = n * n;  // dense: one causal call
  if (p.pattern != kernels::Pattern::dense) {
    const int64_t l = p.stride, rows = (n + l - 1) / l;
    scores = rows * l * l;  // own row
    if (p.pattern == kernels::Pattern::strided) {
      scores += std::max<int64_t>(rows - 1, 0) * l * l + l * std::max<int64_t>(rows - 2, 0) * (rows - 2);
    } else {
      scores += std::max<int64_t>(rows - 1, 0) * l * std::max<int64_t>(rows - 1, 0) * p.summary;
    }
  }
  return (backward ? 5 : 3) * s.batch * s.heads * scores * static_cast<int64_t>(sizeof(float));
}

void set_torch_threads(int threads) {
  guarded("at::set_num_threads", [&] { at::set_num_threads(threads); });
}

int torch_threads() { return at::get_num_threads(); }

double measure_sgemm_gflops(int64_t size, int repeats) {
  return guarded("sgemm roofline", [&] {
    at::NoGradGuard no_grad;
    const at::Tensor a = at::randn({size, size}, at::TensorOptions().dtype(at::kFloat));
    const at::Tensor b = at::randn({size, size}, at::TensorOptions().dtype(at::kFloat));
    at::Tensor c = at::empty({size, size}, at::TensorOptions().dtype(at::kFloat));
    const Timing t = time_median([&] { at::mm_out(c, a, b); }, repeats);
    const double flops =
        2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
    return flops / (t.median_ms * 1e-3) / 1e9;
  });
}

}  // namespace stx::bench
