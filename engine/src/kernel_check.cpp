#include "stx/engine/kernel_check.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "layer_head_patterns.h"
#include "stx/engine/error.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"

namespace stx::engine {
namespace {

// The project's bound for attention against a reference (docs/style.md), and an absolute bound that
// catches a single wrong element the normalised error would average away. Two fp32 paths of a correct
// kernel differ by about 1e-7; a wrong mask or a lost block gives errors near 1.
constexpr double kMaxNmse = 5e-4;
constexpr double kMaxAbsError = 1e-3;

// A [batch, heads, n, head_dim] fp32 problem.
struct Problem {
  int64_t batch, heads, n, dim;
  std::vector<float> q, k, v;
  int64_t elements() const { return batch * heads * n * dim; }
  kernels::Strides strides() const { return kernels::Strides::contiguous(heads, n, dim); }
};

struct Output {
  std::vector<float> out, lse;
};

KernelComparison compare(const Output& got, const Output& want) {
  KernelComparison c;
  double error_sum = 0.0, want_sum = 0.0;
  for (size_t e = 0; e < want.out.size(); ++e) {
    const double diff = static_cast<double>(got.out[e]) - want.out[e];
    if (!std::isfinite(got.out[e])) c.finite = false;
    c.max_abs = std::max(c.max_abs, std::abs(diff));
    error_sum += diff * diff;
    want_sum += static_cast<double>(want.out[e]) * want.out[e];
  }
  c.nmse = want_sum > 0.0 ? error_sum / want_sum : error_sum;
  for (size_t e = 0; e < want.lse.size(); ++e) {
    if (!std::isfinite(got.lse[e])) c.finite = false;
    c.lse_max_abs = std::max(c.lse_max_abs, std::abs(static_cast<double>(got.lse[e]) - want.lse[e]));
  }
  c.passed = c.finite && c.nmse <= kMaxNmse && c.max_abs <= kMaxAbsError && c.lse_max_abs <= kMaxAbsError;
  return c;
}

Output forward(const Problem& problem, const kernels::Layout& layout) {
  Output result;
  result.out.assign(problem.elements(), 0.0f);
  result.lse.assign(problem.batch * problem.heads * problem.n, 0.0f);
  kernels::ForwardParams p;
  p.q = problem.q.data();
  p.k = problem.k.data();
  p.v = problem.v.data();
  p.out = result.out.data();
  p.lse = result.lse.data();
  p.q_stride = p.k_stride = p.v_stride = p.out_stride = problem.strides();
  p.batch = problem.batch;
  p.heads = problem.heads;
  p.seq_len = problem.n;
  p.head_dim = problem.dim;
  p.layout = &layout;
  kernels::attention_forward(p);
  return result;
}

// Runs the single-query decode kernel at every position against the full K/V as its cache, and lays the
// rows out like the forward's output. An independent path: it walks attended ranges, not blocks.
Output decode_every_position(const Problem& problem, const kernels::Layout& layout) {
  Output result;
  result.out.assign(problem.elements(), 0.0f);
  result.lse.assign(problem.batch * problem.heads * problem.n, 0.0f);
  const kernels::Strides full = problem.strides();
  std::vector<float> row(problem.batch * problem.heads * problem.dim);
  std::vector<float> row_lse(problem.batch * problem.heads);
  kernels::DecodeParams p;
  p.k_cache = problem.k.data();
  p.v_cache = problem.v.data();
  p.k_stride = p.v_stride = full;
  p.q_stride = full;  // q points at position i of the full tensor; .seq is unused
  p.out = row.data();
  p.out_stride = kernels::Strides{problem.heads * problem.dim, problem.dim, 0};
  p.lse = row_lse.data();
  p.batch = problem.batch;
  p.heads = problem.heads;
  p.head_dim = problem.dim;
  p.capacity = problem.n;
  p.patterns = layout.heads.data();
  for (int64_t i = 0; i < problem.n; ++i) {
    p.q = problem.q.data() + i * problem.dim;
    p.position = i;
    kernels::attention_decode(p);
    for (int64_t bh = 0; bh < problem.batch * problem.heads; ++bh) {
      std::copy_n(row.data() + bh * problem.dim, problem.dim,
                  result.out.data() + (bh * problem.n + i) * problem.dim);
      result.lse[bh * problem.n + i] = row_lse[bh];
    }
  }
  return result;
}

// Best wall time of a few forwards, in seconds; one run is enough once a run takes half a second.
double time_forward(const Problem& problem, const kernels::Layout& layout) {
  using clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 4; ++run) {
    const auto start = clock::now();
    forward(problem, layout);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    best = std::min(best, seconds);
    if (run == 0 && seconds > 0.5) break;
  }
  return best;
}

// Puts the process's CPU path back however the check ends: the check forces paths the rest of the
// program did not ask for.
class CpuPathRestorer {
 public:
  CpuPathRestorer() : saved_(kernels::active_cpu_isa()) {}
  ~CpuPathRestorer() { kernels::force_cpu_isa(saved_); }
  CpuPathRestorer(const CpuPathRestorer&) = delete;
  CpuPathRestorer& operator=(const CpuPathRestorer&) = delete;

 private:
  kernels::CpuIsa saved_;
};

}  // namespace

void KernelCheckRequest::validate() const {
  layer.validate();
  auto check_between = [](const char* setting, const std::string& what, int64_t value, int64_t hi) {
    if (value < 1 || value > hi) {
      throw Error(what + " must be between 1 and " + std::to_string(hi) + ", not " + std::to_string(value),
                  {setting});
    }
  };
  check_between("n", "the sequence length n", layer.n, kMaxLength);
  check_between("batch", "the batch size", batch, kMaxBatch);
  check_between("head_dim", "the head dimension", head_dim, kMaxHeadDim);
  const int64_t elements = batch * layer.heads * layer.n * head_dim;
  if (elements > kMaxElements) {
    throw Error("batch x heads x n x head dimension must be at most " + std::to_string(kMaxElements) +
                    ", not " + std::to_string(elements),
                {"batch", "heads", "n", "head_dim"});
  }
}

KernelMachine kernel_machine() {
  KernelMachine machine;
  machine.cpu_path = kernels::to_string(kernels::best_cpu_isa());
  machine.threads = omp_get_max_threads();
  machine.cuda_built = kernels::built_with_cuda();
  machine.cuda_device = kernels::cuda_device_available();
  return machine;
}

KernelCheckReport run_kernel_check(const KernelCheckRequest& request) {
  request.validate();
  const LayerPatternSpec& spec = request.layer;
  Problem problem{request.batch, spec.heads, spec.n, request.head_dim, {}, {}, {}};
  std::mt19937_64 rng(request.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::vector<float>* x : {&problem.q, &problem.k, &problem.v}) {
    x->resize(problem.elements());
    for (float& value : *x) value = normal(rng);
  }
  const auto layout = kernels::cached_layout(spec.n, spec.block, layer_head_patterns(spec));
  const auto dense = kernels::cached_layout(
      spec.n, spec.block,
      kernels::layer_patterns(kernels::Pattern::dense, 0, 0, spec.heads, kernels::Combination::merged));

  KernelCheckReport report;
  report.machine = kernel_machine();
  const CpuPathRestorer restore_path;
  const kernels::CpuIsa best = kernels::best_cpu_isa();
  kernels::force_cpu_isa(best);

  const Output reference = forward(problem, *layout);
  report.decode_vs_forward = compare(decode_every_position(problem, *layout), reference);
  if (best != kernels::CpuIsa::portable) {
    kernels::force_cpu_isa(kernels::CpuIsa::portable);
    const Output portable = forward(problem, *layout);
    kernels::force_cpu_isa(best);
    report.portable_vs_vectorised = compare(portable, reference);
  }
  report.sparse_seconds = time_forward(problem, *layout);
  report.dense_seconds = time_forward(problem, *dense);
  return report;
}

}  // namespace stx::engine
