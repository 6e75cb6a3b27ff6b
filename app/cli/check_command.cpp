#include "check_command.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"

namespace stx::cli {
namespace {

namespace kernels = stx::kernels;

// The dense timing is O(n^2): at this n it already takes seconds per forward on a laptop.
constexpr int64_t kMaxCheckN = 16384;
// q, k, v and four outputs live at once; this keeps them under about 1 GB.
constexpr int64_t kMaxElements = int64_t{1} << 25;
// The project's bound for attention against a reference (docs/style.md), and an absolute bound that
// catches a single wrong element the normalised error would average away. Two fp32 paths of a correct
// kernel differ by about 1e-7; a wrong mask or a lost block gives errors near 1.
constexpr double kMaxNmse = 5e-4;
constexpr double kMaxAbsError = 1e-3;

// A [batch, heads, n, head_dim] fp32 problem with its outputs.
struct Problem {
  int64_t batch, heads, n, dim;
  std::vector<float> q, k, v;
  int64_t elements() const { return batch * heads * n * dim; }
  kernels::Strides strides() const { return kernels::Strides::contiguous(heads, n, dim); }
};

struct Output {
  std::vector<float> out, lse;
};

struct Comparison {
  double max_abs = 0.0;      // over out
  double nmse = 0.0;         // sum (a - b)^2 / sum b^2 over out
  double lse_max_abs = 0.0;  // over lse
  bool finite = true;
  bool passed() const {
    return finite && nmse <= kMaxNmse && max_abs <= kMaxAbsError && lse_max_abs <= kMaxAbsError;
  }
};

Comparison compare(const Output& got, const Output& want) {
  Comparison c;
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

std::string format(const char* spec, double value) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

std::string speed_text(double sparse_seconds, double dense_seconds) {
  if (sparse_seconds <= dense_seconds) return format("%.2fx faster", dense_seconds / sparse_seconds);
  return format("%.2fx slower", sparse_seconds / dense_seconds);
}

void print_comparison(const std::string& what, const Comparison& c) {
  std::cout << "  " << what << ": max abs err " << format("%.3g", c.max_abs) << ", nmse "
            << format("%.3g", c.nmse) << ", lse max abs err " << format("%.3g", c.lse_max_abs)
            << (c.finite ? "" : ", NON-FINITE values") << (c.passed() ? "  ok" : "  FAIL") << "\n";
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& options) {
  CLI::App* command = app.add_subcommand(
      "check", "Check the CPU kernels on random inputs: forward vs decode, portable vs vectorised path");
  command->add_option("--n", options.n, "sequence length, 1.." + std::to_string(kMaxCheckN))
      ->capture_default_str();
  command->add_option("--batch", options.batch, "batch size, 1..16")->capture_default_str();
  command->add_option("--dim", options.dim, "head dimension, 1..256")->capture_default_str();
  command->add_option("--seed", options.seed, "seed of the random q, k, v")->capture_default_str();
  options.pattern.add_to(*command, 64);  // l near sqrt(n) for the default n
  command->footer("Exit status: 0 PASS, 1 FAIL, 2 bad option. The CPU kernels run on all cores.");
  return command;
}

int run_check_command(const CheckOptions& options) {
  require_between("--n", options.n, 1, kMaxCheckN);
  require_between("--batch", options.batch, 1, 16);
  require_between("--dim", options.dim, 1, 256);
  options.pattern.validate();
  const int64_t elements = options.batch * options.pattern.heads * options.n * options.dim;
  if (elements > kMaxElements)
    throw UsageError("--batch x --heads x --n x --dim must be at most " + std::to_string(kMaxElements) +
                     ", got " + std::to_string(elements));

  Problem problem{options.batch, options.pattern.heads, options.n, options.dim, {}, {}, {}};
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::vector<float>* x : {&problem.q, &problem.k, &problem.v}) {
    x->resize(problem.elements());
    for (float& value : *x) value = normal(rng);
  }
  const auto layout =
      kernels::cached_layout(options.n, options.pattern.block, options.pattern.head_patterns());
  const auto dense = kernels::cached_layout(
      options.n, options.pattern.block,
      kernels::layer_patterns(kernels::Pattern::dense, 0, 0, problem.heads, kernels::Combination::merged));

  const kernels::CpuIsa best = kernels::best_cpu_isa();
  kernels::force_cpu_isa(best);
  std::cout << "stx check: " << options.pattern.summary_line() << "; batch " << problem.batch << ", "
            << problem.heads << " heads, n = " << problem.n << ", head_dim " << problem.dim << ", block "
            << options.pattern.block << ", seed " << options.seed << "\n";
  std::cout << "CPU path: " << kernels::to_string(kernels::active_cpu_isa()) << ", " << omp_get_max_threads()
            << " OpenMP threads; CUDA kernels: "
            << (kernels::built_with_cuda()
                    ? (kernels::cuda_device_available() ? "built, device present" : "built, no device")
                    : "not built")
            << " (the check runs on the CPU)\n";

  const Output reference = forward(problem, *layout);
  bool passed = true;

  const Comparison decoded = compare(decode_every_position(problem, *layout), reference);
  print_comparison("decode at all " + std::to_string(problem.n) + " positions vs forward", decoded);
  passed = passed && decoded.passed();

  if (best == kernels::CpuIsa::portable) {
    std::cout << "  portable vs vectorised forward: skipped, this processor has only the portable path\n";
  } else {
    kernels::force_cpu_isa(kernels::CpuIsa::portable);
    const Output portable = forward(problem, *layout);
    kernels::force_cpu_isa(best);
    const Comparison paths = compare(portable, reference);
    print_comparison(std::string("portable vs ") + kernels::to_string(best) + " forward", paths);
    passed = passed && paths.passed();
  }

  const double sparse_seconds = time_forward(problem, *layout);
  const double dense_seconds = time_forward(problem, *dense);
  const std::string pattern_name = kernels::to_string(options.pattern.parsed_pattern());
  std::cout << "forward time (" << kernels::to_string(best) << "): " << pattern_name << " "
            << format("%.3f", sparse_seconds * 1e3) << " ms, dense " << format("%.3f", dense_seconds * 1e3)
            << " ms; " << pattern_name << " / dense = " << format("%.3f", sparse_seconds / dense_seconds)
            << " (" << speed_text(sparse_seconds, dense_seconds) << ")\n";
  std::cout << (passed ? "PASS" : "FAIL") << "\n";
  return passed ? 0 : 1;
}

}  // namespace stx::cli
