// stx-bench attention. Kernel side only: LibTorch is reached through dense_baseline.h.
//
// For each n, each pass (fwd, fwdbwd) and each pattern (strided, fixed; merged heads) it times the stx
// CPU kernel, then times LibTorch dense causal attention once per (n, pass) on the same buffers, and
// prints one row per (n, pattern, pass). --device cuda hands over to attention_cuda_bench.cpp.
#include "commands.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attention_cuda_bench.h"
#include "dense_baseline.h"
#include "memory.h"
#include "pattern_spec.h"
#include "report.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "timing.h"

namespace stx::bench {
namespace {

namespace sk = stx::kernels;

constexpr int64_t kSgemmSize = 2048;
constexpr int kSgemmRepeats = 5;
constexpr int kAutoBlocks[] = {32, 64, 128};

struct AttentionOptions {
  std::vector<int64_t> n{1024, 4096, 8192, 16384};
  int64_t heads = 4;
  int64_t head_dim = 64;
  int64_t batch = 1;
  std::vector<std::string> patterns{"strided", "fixed"};
  std::vector<std::string> passes{"fwd", "fwdbwd"};
  int64_t stride = 128;  // l
  int64_t summary = 32;  // c, fixed only
  int block = 0;         // 0: try kAutoBlocks at the smallest n
  int repeats = 5;
  double dense_budget_gb = 8.0;
  double dense_time_limit_s = 30.0;
  std::string dense_backward = "explicit";
  int threads = 0;  // 0: the machine's cores
  std::string cpu_path;
  std::string json_path;
  std::string device = "cpu";
  std::string dtype;  // --device cuda only; empty: bf16
};

enum class Pass { fwd, fwdbwd };

// Useful FLOPs of one sparse call: 2 per multiply-add over the attended pairs only.
//   fwd    = 4 * D * pairs * batch    (q k^T and p v)
//   fwdbwd = 12 * D * pairs * batch   (fwd + backward's dv, dp, dq, dk: 8 * D * pairs)
double useful_flops(Pass pass, int64_t head_dim, int64_t pairs, int64_t batch) {
  const double per_pair = pass == Pass::fwd ? 4.0 : 12.0;
  return per_pair * static_cast<double>(head_dim) * static_cast<double>(pairs) * static_cast<double>(batch);
}

// A 64-byte aligned fp32 buffer; zero-filled, so its pages are resident from the start.
class Buffer {
 public:
  explicit Buffer(int64_t count) : count_(count) {
    const size_t bytes = ((static_cast<size_t>(count) * sizeof(float) + 63) / 64) * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, std::max<size_t>(bytes, 64))));
    if (!data_) throw std::runtime_error("out of memory allocating " + std::to_string(bytes) + " bytes");
    std::fill(data_.get(), data_.get() + count_, 0.0f);
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return count_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t count_;
};

// Standard normal values, generated in parallel chunks with fixed seeds: the same on any thread count.
void fill_normal(Buffer& buffer, uint64_t seed) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t chunks = (buffer.size() + kChunk - 1) / kChunk;
  float* data = buffer.data();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(c));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t end = std::min(buffer.size(), (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) data[i] = normal(rng);
  }
}

// q, k, v and the backward's dout, [batch, heads, n, head_dim] contiguous: shared by sparse and dense.
struct Inputs {
  DenseShape shape;
  Buffer q, k, v, dout;
  explicit Inputs(const DenseShape& s) : shape(s), q(count(s)), k(count(s)), v(count(s)), dout(count(s)) {
    fill_normal(q, 1);
    fill_normal(k, 2);
    fill_normal(v, 3);
    fill_normal(dout, 4);
  }
  static int64_t count(const DenseShape& s) { return s.batch * s.heads * s.seq_len * s.head_dim; }
};

struct Measured {
  Timing timing;
  double peak_mb = 0.0;
  double rss_before_mb = 0.0;
};

// Starts a memory scope: earlier rows' freed memory is returned and the peak is reset to now.
double begin_memory_scope() {
  release_free_memory();
  reset_peak_rss();
  return to_mb(current_rss_bytes());
}

// Our kernel: forward, or forward then backward, with the outputs allocated inside the memory scope.
Measured run_sparse(const Inputs& in, const sk::Layout& layout, Pass pass, int repeats) {
  Measured m;
  m.rss_before_mb = begin_memory_scope();
  const DenseShape& s = in.shape;
  const sk::Strides strides = sk::Strides::contiguous(s.heads, s.seq_len, s.head_dim);
  Buffer out(Inputs::count(s));
  Buffer lse(s.batch * s.heads * s.seq_len);

  sk::ForwardParams fp;
  fp.q = in.q.data();
  fp.k = in.k.data();
  fp.v = in.v.data();
  fp.out = out.data();
  fp.lse = lse.data();
  fp.q_stride = fp.k_stride = fp.v_stride = fp.out_stride = strides;
  fp.batch = s.batch;
  fp.heads = s.heads;
  fp.seq_len = s.seq_len;
  fp.head_dim = s.head_dim;
  fp.layout = &layout;

  if (pass == Pass::fwd) {
    m.timing = time_median([&] { sk::attention_forward(fp); }, repeats);
  } else {
    Buffer dq(Inputs::count(s)), dk(Inputs::count(s)), dv(Inputs::count(s));
    sk::BackwardParams bp;
    bp.q = in.q.data();
    bp.k = in.k.data();
    bp.v = in.v.data();
    bp.out = out.data();
    bp.dout = in.dout.data();
    bp.lse = lse.data();
    bp.dq = dq.data();
    bp.dk = dk.data();
    bp.dv = dv.data();
    bp.q_stride = bp.k_stride = bp.v_stride = bp.out_stride = bp.dout_stride = strides;
    bp.dq_stride = bp.dk_stride = bp.dv_stride = strides;
    bp.batch = s.batch;
    bp.heads = s.heads;
    bp.seq_len = s.seq_len;
    bp.head_dim = s.head_dim;
    bp.layout = &layout;
    m.timing = time_median(
        [&] {
          sk::attention_forward(fp);
          sk::attention_backward(bp);
        },
        repeats);
  }
  m.peak_mb = to_mb(peak_rss_bytes());
  return m;
}

struct DenseOutcome {
  std::optional<Measured> measured;
  std::string skipped;  // why, when not measured
};

std::string readable_size(int64_t bytes) {
  char text[32];
  if (bytes < 1000000000) {
    std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  }
  return text;
}

DenseOutcome run_dense(const Inputs& in, Pass pass, const AttentionOptions& o, DenseBackward mode) {
  DenseOutcome result;
  const int64_t needed = dense_peak_bytes_estimate(in.shape, pass == Pass::fwdbwd, mode);
  if (static_cast<double>(needed) > o.dense_budget_gb * 1e9) {
    result.skipped = "skipped: needs " + readable_size(needed);
    return result;
  }
  Measured m;
  m.rss_before_mb = begin_memory_scope();
  {
    DenseAttention dense(in.shape, in.q.data(), in.k.data(), in.v.data(), in.dout.data(), mode);
    if (pass == Pass::fwd) {
      m.timing = time_median([&] { dense.forward(); }, o.repeats, o.dense_time_limit_s);
    } else {
      m.timing = time_median([&] { dense.forward_backward(); }, o.repeats, o.dense_time_limit_s);
    }
  }
  m.peak_mb = to_mb(peak_rss_bytes());
  result.measured = m;
  return result;
}

struct ReshapeOutcome {
  std::optional<Timing> timing;
  std::string skipped;  // why, when not measured
  std::string kernel;
};

// The reshape route (dense_baseline.h) on the same inputs, under the dense baseline's memory budget and
// time limit: the peer a LibTorch user can write without our kernels.
ReshapeOutcome run_reshape(const Inputs& in, const PatternSpec& spec, Pass pass, const AttentionOptions& o) {
  ReshapeOutcome result;
  const sk::HeadPattern& pattern = spec.heads.front();
  const int64_t needed = reshape_route_peak_bytes_estimate(in.shape, pattern, pass == Pass::fwdbwd);
  if (static_cast<double>(needed) > o.dense_budget_gb * 1e9) {
    result.skipped = "skipped: needs " + readable_size(needed);
    return result;
  }
  try {
    ReshapeRouteAttention route(in.shape, in.q.data(), in.k.data(), in.v.data(), in.dout.data(), pattern);
    result.kernel = route.kernel();
    if (pass == Pass::fwd) {
      result.timing = time_median([&] { route.forward(); }, o.repeats, o.dense_time_limit_s);
    } else {
      result.timing = time_median([&] { route.forward_backward(); }, o.repeats, o.dense_time_limit_s);
    }
  } catch (const std::runtime_error& e) {  // LibTorch's errors, out of memory included (dense_baseline.h)
    result.timing.reset();
    result.skipped = std::string("failed: ") + e.what();
  }
  return result;
}

std::vector<PatternSpec> make_patterns(const AttentionOptions& o) {
  return stx::bench::make_patterns(o.patterns, o.stride, o.summary, o.heads, o.block);
}

// With no --block, times the forward at the smallest n with each of kAutoBlocks and keeps the fastest.
void choose_blocks(std::vector<PatternSpec>& specs, const AttentionOptions& o, int64_t smallest_n) {
  const DenseShape shape{o.batch, o.heads, smallest_n, o.head_dim};
  std::unique_ptr<Inputs> inputs;
  for (PatternSpec& spec : specs) {
    if (spec.block != 0) continue;
    if (!inputs) inputs = std::make_unique<Inputs>(shape);
    std::string tried;
    double best_ms = 0.0;
    for (int block : kAutoBlocks) {
      const auto layout = sk::build_layout(smallest_n, block, spec.heads);
      // At least 3 repeats: a single call is too noisy to pick from on a shared machine.
      const double t = run_sparse(*inputs, *layout, Pass::fwd, std::max(3, o.repeats)).timing.median_ms;
      char item[64];
      std::snprintf(item, sizeof item, "%sB=%d %.3f ms", tried.empty() ? "" : ", ", block, t);
      tried += item;
      if (spec.block == 0 || t < best_ms) {
        spec.block = block;
        best_ms = t;
      }
    }
    std::cout << "block for " << spec.desc << ": " << spec.block
              << " (fastest fwd at n=" << smallest_n << ": " << tried << ")\n";
  }
}

Record make_record(int64_t n, const PatternSpec& spec, Pass pass, const AttentionOptions& o,
                   const sk::Layout& layout, const Measured& sparse, const DenseOutcome& dense,
                   const ReshapeOutcome& reshape, double sgemm) {
  Record r;
  r.n = n;
  r.pattern = spec.name;
  r.pattern_desc = spec.desc;
  r.pass = pass == Pass::fwd ? "fwd" : "fwdbwd";
  r.block = spec.block;
  r.batch = o.batch;
  r.heads = o.heads;
  r.head_dim = o.head_dim;
  r.attended_pairs = layout.attended_pairs();
  r.flops = useful_flops(pass, o.head_dim, r.attended_pairs, o.batch);
  r.sparse_ms = sparse.timing.median_ms;
  r.sparse_repeats = sparse.timing.repeats;
  r.gflops = r.flops / (r.sparse_ms * 1e-3) / 1e9;
  r.roofline_fraction = sgemm > 0.0 ? r.gflops / sgemm : 0.0;
  r.peak_mb = sparse.peak_mb;
  r.rss_before_mb = sparse.rss_before_mb;
  if (dense.measured) {
    r.dense_ms = dense.measured->timing.median_ms;
    r.dense_repeats = dense.measured->timing.repeats;
    r.dense_peak_mb = dense.measured->peak_mb;
    r.dense_rss_before_mb = dense.measured->rss_before_mb;
  } else {
    r.dense_skipped = dense.skipped;
  }
  if (reshape.timing) r.reshape_ms = reshape.timing->median_ms;
  r.reshape_skipped = reshape.skipped;
  r.reshape_kernel = reshape.kernel;
  return r;
}

void print_header(const AttentionOptions& o, const RunInfo& info, bool peak_resets, int hardware_threads) {
  std::printf("stx-bench attention\n");
  std::printf("cpu path: %s; threads: LibTorch %d, OpenMP %d (machine: %d)\n", info.cpu_path.c_str(),
              info.torch_threads, info.openmp_threads, hardware_threads);
  std::printf("roofline: sgemm %lldx%lldx%lld fp32 (at::mm, median of %d) = %.1f GFLOP/s\n",
              static_cast<long long>(kSgemmSize), static_cast<long long>(kSgemmSize),
              static_cast<long long>(kSgemmSize), kSgemmRepeats, info.sgemm_gflops);
  std::printf(
      "shape: batch %lld, heads %lld, head dim %lld, fp32; timing: warm-up once, median of %d repeats\n",
      static_cast<long long>(o.batch), static_cast<long long>(o.heads), static_cast<long long>(o.head_dim),
      o.repeats);
  std::printf(
      "dense: LibTorch, s = (q*scale) @ k^T, masked_fill(upper, -inf), softmax, @ v; fwdbwd backward: %s%s; "
      "measured once per (n, pass), skipped above %.1f GB\n",
      info.dense_backward.c_str(),
      info.dense_backward == "explicit" ? " (matmul-based)" : " (through the four ops)", o.dense_budget_gb);
  std::printf(
      "gflops: useful FLOPs of the sparse kernel / sparse_ms; fwd = 4*D*pairs*batch, "
      "fwdbwd = 12*D*pairs*batch (pairs = attended (i, j) pairs summed over heads)\n");
  std::printf(
      "reshape: the same sparse attention as LibTorch attention calls on reshaped views (own row, previous "
      "row, columns; own row, gathered summaries) merged by log-sum-exp; same budget and time limit as dense; "
      "vs_reshape: reshape_ms / sparse_ms\n");
  std::printf("roofline: gflops / sgemm GFLOP/s; ratio: dense_ms / sparse_ms; peak_mb: %s\n",
              peak_resets ? "peak resident set of the process during the sparse run (VmHWM, reset per row)"
                          : "peak resident set since start (this kernel cannot reset VmHWM)");
}

// Keeps the first of each repeated name, in the order given.
void remove_repeats(std::vector<std::string>& names) {
  std::vector<std::string> kept;
  for (const std::string& name : names) {
    if (std::find(kept.begin(), kept.end(), name) == kept.end()) kept.push_back(name);
  }
  names = std::move(kept);
}

void run_attention(const AttentionOptions& options) {
  AttentionOptions o = options;
  if (o.summary > o.stride) {
    throw CLI::ValidationError("--summary", "must be at most --stride (c <= l), got c=" +
                                                std::to_string(o.summary) + " l=" + std::to_string(o.stride));
  }
  std::sort(o.n.begin(), o.n.end());
  o.n.erase(std::unique(o.n.begin(), o.n.end()), o.n.end());
  remove_repeats(o.patterns);
  remove_repeats(o.passes);
  const DenseBackward dense_mode =
      o.dense_backward == "autograd" ? DenseBackward::autograd : DenseBackward::explicit_matmul;
  if (!o.json_path.empty()) check_json_path(o.json_path);

  const int hardware_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = o.threads > 0 ? o.threads : hardware_threads;
  set_torch_threads(threads);
  omp_set_num_threads(threads);
  if (o.cpu_path == "portable") sk::force_cpu_isa(sk::CpuIsa::portable);
  if (o.cpu_path == "avx2") sk::force_cpu_isa(sk::CpuIsa::avx2);
  if (o.cpu_path == "avx512") sk::force_cpu_isa(sk::CpuIsa::avx512);

  std::vector<PatternSpec> specs = make_patterns(o);
  const bool peak_resets = reset_peak_rss();

  RunInfo info;
  info.cpu_path = sk::to_string(sk::active_cpu_isa());
  info.torch_threads = torch_threads();
  info.openmp_threads = omp_get_max_threads();
  info.dense_backward = to_string(dense_mode);
  info.sgemm_gflops = measure_sgemm_gflops(kSgemmSize, kSgemmRepeats);

  std::vector<Pass> passes;
  for (const std::string& p : o.passes) passes.push_back(p == "fwd" ? Pass::fwd : Pass::fwdbwd);

  print_header(o, info, peak_resets, hardware_threads);
  choose_blocks(specs, o, o.n.front());
  std::printf("\n");
  print_table_header(std::cout);

  std::vector<Record> records;
  for (int64_t n : o.n) {
    const Inputs inputs(DenseShape{o.batch, o.heads, n, o.head_dim});
    std::vector<std::shared_ptr<const sk::Layout>> layouts;
    for (const PatternSpec& spec : specs) layouts.push_back(sk::build_layout(n, spec.block, spec.heads));
    for (Pass pass : passes) {
      // Sparse first, so that its peaks never include heap the dense run left behind.
      std::vector<Measured> sparse;
      for (size_t i = 0; i < specs.size(); ++i)
        sparse.push_back(run_sparse(inputs, *layouts[i], pass, o.repeats));
      const DenseOutcome dense = run_dense(inputs, pass, o, dense_mode);
      for (size_t i = 0; i < specs.size(); ++i) {
        const ReshapeOutcome reshape = run_reshape(inputs, specs[i], pass, o);
        records.push_back(
            make_record(n, specs[i], pass, o, *layouts[i], sparse[i], dense, reshape, info.sgemm_gflops));
        print_table_row(std::cout, records.back());
      }
    }
    // Written after every n, so that a long sweep cut short still leaves its finished rows.
    if (!o.json_path.empty()) write_json(o.json_path, info, records);
  }
  if (!o.json_path.empty())
    std::cout << "\nwrote " << records.size() << " records to " << o.json_path << "\n";
}

// --device cuda: refuses the options that only the CPU sweep reads, and a machine or build without CUDA
// (one line, exit status 2), then hands over to attention_cuda_bench.cpp.
void run_attention_on_cuda(const AttentionOptions& options, const std::vector<const CLI::Option*>& cpu_only,
                           bool dense_budget_given) {
  for (const CLI::Option* option : cpu_only) {
    if (option->count() > 0) throw CLI::ValidationError(option->get_name(), "applies to --device cpu only");
  }
  const std::string unavailable = cuda_unavailable_reason();
  if (!unavailable.empty()) {
    // CLI11 prints nothing for a RuntimeError; main() returns its exit code.
    std::cerr << "stx-bench: --device cuda: " << unavailable << "; use --device cpu\n";
    throw CLI::RuntimeError(2);
  }
  if (options.summary > options.stride) {
    throw CLI::ValidationError("--summary",
                               "must be at most --stride (c <= l), got c=" + std::to_string(options.summary) +
                                   " l=" + std::to_string(options.stride));
  }
  CudaAttentionOptions c;
  c.n = options.n;
  std::sort(c.n.begin(), c.n.end());
  c.n.erase(std::unique(c.n.begin(), c.n.end()), c.n.end());
  c.patterns = options.patterns;
  remove_repeats(c.patterns);
  c.passes = options.passes;
  remove_repeats(c.passes);
  c.heads = options.heads;
  c.head_dim = options.head_dim;
  c.batch = options.batch;
  c.stride = options.stride;
  c.summary = options.summary;
  c.block = options.block;
  c.repeats = options.repeats;
  c.dtype = options.dtype.empty() ? "bf16" : options.dtype;
  if (dense_budget_given) c.dense_budget_gb = options.dense_budget_gb;
  c.json_path = options.json_path;
  run_attention_cuda(c);
}

}  // namespace

void register_attention_command(CLI::App& parent) {
  auto o = std::make_shared<AttentionOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "attention",
      "Time the stx sparse attention kernels against LibTorch dense causal attention (CPU fp32, or CUDA)");
  cmd->add_option("--n", o->n, "Sequence lengths; repeat the option or give a comma list")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--heads", o->heads, "Attention heads")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--dim", o->head_dim, "Head dimension D")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Batch size")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--pattern", o->patterns, "Patterns to time, merged heads (A1 ∪ A2)")
      ->delimiter(',')
      ->check(CLI::IsMember({"strided", "fixed"}))
      ->capture_default_str();
  cmd->add_option("--pass", o->passes, "Passes: fwd (forward), fwdbwd (forward then backward)")
      ->delimiter(',')
      ->check(CLI::IsMember({"fwd", "fwdbwd"}))
      ->capture_default_str();
  cmd->add_option("--stride", o->stride, "Stride l of both patterns")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--summary", o->summary, "Summary cells c of the fixed pattern, 1 <= c <= l")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option(
         "--block", o->block,
         "Block size B for every pattern; default: try 32, 64, 128 at the smallest n and keep the fastest "
         "forward per pattern")
      ->check(CLI::IsMember({16, 32, 64, 128}));
  cmd->add_option("--repeats", o->repeats, "Timed calls after one warm-up; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  const CLI::Option* dense_budget =
      cmd->add_option("--dense-budget-gb", o->dense_budget_gb,
                      "Skip dense when its T x T temporaries (all heads) and mask would need more than this; "
                      "with --device cuda the masked baseline's, default 80% of the device's memory")
          ->check(CLI::Range(0.0, 1e6))
          ->capture_default_str();
  std::vector<const CLI::Option*> cpu_only;
  cpu_only.push_back(
      cmd->add_option(
             "--dense-time-limit", o->dense_time_limit_s,
             "Seconds of timed dense calls per row; slow dense cases make fewer repeats (at least 1)")
          ->check(CLI::Range(0.0, 1e6))
          ->capture_default_str());
  cpu_only.push_back(
      cmd->add_option("--dense-backward", o->dense_backward,
                      "Dense backward: explicit (matmul-based) or autograd (through the four ops)")
          ->check(CLI::IsMember({"explicit", "autograd"}))
          ->capture_default_str());
  cpu_only.push_back(cmd->add_option("--threads", o->threads,
                                     "Threads for LibTorch and OpenMP; default: the machine's cores")
                         ->check(CLI::Range(1, 4096)));
  cpu_only.push_back(cmd->add_option("--cpu-path", o->cpu_path,
                                     "Force a CPU code path; default: the best the processor supports")
                         ->check(CLI::IsMember({"portable", "avx2", "avx512"})));
  cmd->add_option(
         "--device", o->device,
         "cpu: the stx CPU kernels (fp32); cuda: the torch op stx::sparse_attention on CUDA device 0 "
         "against at::scaled_dot_product_attention and masked matmul attention")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  const CLI::Option* dtype =
      cmd->add_option("--dtype", o->dtype, "Input dtype with --device cuda: bf16 (default), fp16 or fp32")
          ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  cmd->add_option("--json", o->json_path, "Also write the records as a JSON array to FILE (atomically)")
      ->type_name("FILE");
  cmd->footer(
      "Columns: sparse_ms and dense_ms are medians in milliseconds; ratio = dense_ms / sparse_ms;\n"
      "gflops = useful FLOPs / sparse time with fwd = 4*D*pairs*batch and fwdbwd = 12*D*pairs*batch\n"
      "(pairs = attended (i, j) pairs summed over heads); roofline = gflops / the sgemm GFLOP/s of at::mm\n"
      "on 2048^3 fp32; peak_mb = peak resident set of the process during the sparse run.\n"
      "Dense is LibTorch causal attention on the same inputs, timed once per (n, pass).\n"
      "--device cuda prints its own columns: stx_ms, sdpa_ms and masked_ms per call, vs_* = baseline / stx.");
  cmd->callback([o, cpu_only, dense_budget, dtype] {
    if (o->device == "cuda") return run_attention_on_cuda(*o, cpu_only, dense_budget->count() > 0);
    if (dtype->count() > 0 && o->dtype != "fp32") {
      throw CLI::ValidationError("--dtype",
                                 "the CPU kernels take fp32 only; " + o->dtype + " needs --device cuda");
    }
    run_attention(*o);
  });
}

}  // namespace stx::bench
