// stx-bench attention --device cuda.
//
// For each n, each pass (fwd, fwdbwd) and each pattern (strided, fixed; merged heads) it times the torch
// op stx::sparse_attention, which runs our CUDA kernels, then times the two dense baselines once per
// (n, pass) on the same [batch, heads, n, head_dim] CUDA tensors, and prints one row per
// (n, pattern, pass). fwdbwd is the forward plus torch::autograd::grad of q, k and v for a fixed upstream
// gradient, for all three: the work a training step does, with no .grad accumulation in the timing.
#include "attention_cuda_bench.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard, at::AutoGradMode: not in ATen.h of LibTorch 2.x
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/version.h>

#ifdef STX_TORCH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pattern_spec.h"
#include "report.h"
#include "stx/kernels/attention.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"
#include "stx/models/reshape_attention.h"
#include "stx/models/sparse_attention.h"
#include "timing.h"

namespace stx::bench {
namespace {

namespace sk = stx::kernels;

constexpr int kAutoBlocks[] = {32, 64, 128};
// A timed sample is back-to-back calls between two device synchronizes, at least this long: at n = 4096
// one call is tens of microseconds of GPU work, less than the host's launch and synchronize overhead.
constexpr double kSampleMs = 10.0;
constexpr int kMaxCallsPerSample = 1000;
// Without --dense-budget-gb the masked baseline may plan on this share of the device's memory.
constexpr double kDeviceMemoryShare = 0.8;
// The largest |reshape route - stx| the forward may show before a row says the two disagree.
constexpr double kReshapeAgreement = 0.05;

enum class Pass { fwd, fwdbwd };

struct DeviceTiming {
  double median_ms = 0.0;  // per call
  int repeats = 0;         // timed samples after the warm-up
  int calls_per_sample = 0;
};

// Warm-up once (cuBLAS handles, kernel loading, the layout's device copy, the caching allocator), size
// the samples from one synchronized call, then the median per-call time of `repeats` samples.
template <class Fn>
DeviceTiming time_on_device(Fn&& fn, int repeats) {
  const auto sync = [] { torch::cuda::synchronize(); };
  sync();
  fn();
  sync();
  const double once_ms = time_once_ms([&] {
    fn();
    sync();
  });
  DeviceTiming t;
  t.repeats = std::max(1, repeats);
  t.calls_per_sample = static_cast<int>(std::clamp(std::ceil(kSampleMs / std::max(once_ms, 1e-3)), 1.0,
                                                   static_cast<double>(kMaxCallsPerSample)));
  std::vector<double> samples;
  for (int r = 0; r < t.repeats; ++r) {
    const double sample_ms = time_once_ms([&] {
      for (int c = 0; c < t.calls_per_sample; ++c) fn();
      sync();
    });
    samples.push_back(sample_ms / t.calls_per_sample);
  }
  t.median_ms = median(std::move(samples));
  return t;
}

// LibTorch errors carry a backtrace and sometimes several lines; a table note wants the first.
std::string first_line(const c10::Error& e) {
  const std::string text = e.what_without_backtrace();
  return text.substr(0, text.find('\n'));
}

// Same numbers on every GPU: drawn on the CPU from a fixed seed, then copied to the device.
struct Inputs {
  at::Tensor q, k, v, dout;           // [batch, heads, n, head_dim] contiguous, for the forward pass
  at::Tensor q_grad, k_grad, v_grad;  // the same storage as leaves that require grad, for fwdbwd
  at::Tensor causal_mask;             // [n, n] bool, true above the diagonal: the masked baseline's
};

Inputs make_inputs(const CudaAttentionOptions& o, int64_t n, at::ScalarType dtype) {
  at::manual_seed(1);
  const auto draw = [&] {
    return at::randn({o.batch, o.heads, n, o.head_dim}, at::TensorOptions().dtype(at::kFloat))
        .to(at::Device(at::kCUDA, 0), dtype);
  };
  Inputs in;
  in.q = draw();
  in.k = draw();
  in.v = draw();
  in.dout = draw();
  in.q_grad = in.q.detach().requires_grad_(true);
  in.k_grad = in.k.detach().requires_grad_(true);
  in.v_grad = in.v.detach().requires_grad_(true);
  in.causal_mask = at::ones({n, n}, in.q.options().dtype(at::kBool)).triu_(1);
  return in;
}

// One call of `attend(q, k, v)`: the forward alone, or the forward then the gradients of q, k and v.
template <class Attend>
void attend_once(const Inputs& in, Pass pass, Attend&& attend) {
  if (pass == Pass::fwd) {
    at::NoGradGuard no_grad;
    attend(in.q, in.k, in.v);
    return;
  }
  at::AutoGradMode grad_mode(true);
  const at::Tensor out = attend(in.q_grad, in.k_grad, in.v_grad);
  torch::autograd::grad({out}, {in.q_grad, in.k_grad, in.v_grad}, {in.dout});
}

// The masked baseline as a LibTorch user writes it: s = (q * scale) @ k^T, masked_fill(upper, -inf),
// softmax, @ v. The in-place fill is allowed under autograd: matmul's backward does not need its output.
at::Tensor masked_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& causal_mask) {
  at::Tensor p;
  {
    at::Tensor s = at::matmul(q * (1.0 / std::sqrt(static_cast<double>(q.size(3)))), k.transpose(-2, -1));
    s.masked_fill_(causal_mask, -std::numeric_limits<double>::infinity());
    p = at::softmax(s, -1);
  }  // s freed before the second matmul
  return at::matmul(p, v);
}

// Bytes the masked baseline holds at its peak: forward s and p; backward also the gradients of p, of
// the softmax input and of the fill (autograd), so 4 T x T tensors budgeted, as the CPU estimate does.
int64_t masked_peak_bytes(const at::Tensor& q, Pass pass) {
  const int64_t n = q.size(2);
  const int64_t scores = q.size(0) * q.size(1) * n * n * q.element_size();
  return (pass == Pass::fwd ? 2 : 4) * scores + n * n;
}

// The backend at::scaled_dot_product_attention picks for these inputs. It depends on requires_grad and
// the grad mode (some fused kernels have no backward), so it is asked per pass.
std::string sdpa_backend(const Inputs& in, Pass pass) {
#if TORCH_VERSION_MAJOR >= 2
  // at::scaled_dot_product_attention and at::_fused_sdp_choice arrived in LibTorch 2.0; the choice is
  // the one SDPA makes itself. Its int is sdp::SDPBackend (ATen/native/transformers/sdp_utils_cpp.h,
  // at::SDPBackend from 2.4), whose values have stayed put as backends were added.
  try {
    const auto choose = [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
      return at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    };
    int64_t choice = 0;
    if (pass == Pass::fwd) {
      at::NoGradGuard no_grad;
      choice = choose(in.q, in.k, in.v);
    } else {
      at::AutoGradMode grad_mode(true);
      choice = choose(in.q_grad, in.k_grad, in.v_grad);
    }
    switch (choice) {
      case 0: return "math";
      case 1: return "flash_attention";
      case 2: return "efficient_attention";
      case 3: return "cudnn_attention";
      case 4: return "overrideable";
      default: return "unknown (" + std::to_string(choice) + ")";
    }
  } catch (const c10::Error& e) {
    return "none: " + first_line(e);
  }
#else
  (void)in;
  (void)pass;
  return "";
#endif
}

struct Baseline {
  std::optional<DeviceTiming> timing;
  std::string skipped;  // why, when not measured
};

template <class Attend>
Baseline run_baseline(const Inputs& in, Pass pass, int repeats, Attend&& attend) {
  Baseline b;
  try {
    b.timing = time_on_device([&] { attend_once(in, pass, attend); }, repeats);
  } catch (const c10::Error& e) {  // out of memory included (c10::OutOfMemoryError in LibTorch 2.x)
    b.skipped = "failed: " + first_line(e);
  }
  return b;
}

Baseline run_sdpa(const Inputs& in, Pass pass, int repeats) {
#if TORCH_VERSION_MAJOR >= 2  // at::scaled_dot_product_attention is LibTorch 2.0 and later
  return run_baseline(in, pass, repeats, [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
  });
#else
  (void)in;
  (void)pass;
  (void)repeats;
  Baseline b;
  b.skipped = "skipped: needs LibTorch 2.x";
  return b;
#endif
}

Baseline run_masked(const Inputs& in, Pass pass, int repeats, double budget_bytes) {
  const int64_t needed = masked_peak_bytes(in.q, pass);
  if (budget_bytes > 0.0 && static_cast<double>(needed) > budget_bytes) {
    Baseline b;
    char text[64];
    std::snprintf(text, sizeof text, "skipped: needs %.1f GB", static_cast<double>(needed) / 1e9);
    b.skipped = text;
    return b;
  }
  return run_baseline(in, pass, repeats, [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return masked_attention(q, k, v, in.causal_mask);
  });
}

// The reshape route (models/reshape_attention.h): LibTorch's fused calls on reshaped views, merged by
// log-sum-exp; every head has the spec's one pattern (merged).
Baseline run_reshape(const Inputs& in, Pass pass, int repeats, const PatternSpec& spec) {
  return run_baseline(in, pass, repeats, [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    return stx::reshape_route_attention(q, k, v, spec.heads.front());
  });
}

// The largest |difference| between the reshape route's forward and ours on these inputs: a route that
// computed something else would be no peer. NaN when the route fails.
double reshape_disagreement(const Inputs& in, const PatternSpec& spec,
                            const std::shared_ptr<const sk::Layout>& layout) {
  at::NoGradGuard no_grad;
  try {
    const at::Tensor ours = stx::sparse_attention(in.q, in.k, in.v, layout).to(at::kFloat);
    const at::Tensor route = stx::reshape_route_attention(in.q, in.k, in.v, spec.heads.front()).to(at::kFloat);
    return (ours - route).abs().max().item<double>();
  } catch (const c10::Error&) {
    return std::nan("");
  }
}

DeviceTiming run_sparse(const Inputs& in, Pass pass, int repeats,
                        const std::shared_ptr<const sk::Layout>& layout) {
  try {
    return time_on_device(
        [&] {
          attend_once(in, pass, [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
            return stx::sparse_attention(q, k, v, layout);
          });
        },
        repeats);
  } catch (const c10::Error& e) {
    throw std::runtime_error("stx::sparse_attention on CUDA: " + first_line(e));
  }
}

std::vector<PatternSpec> make_patterns(const CudaAttentionOptions& o) {
  return stx::bench::make_patterns(o.patterns, o.stride, o.summary, o.heads, o.block);
}

// With no --block, times our forward at the smallest n with each of kAutoBlocks and keeps the fastest.
void choose_blocks(std::vector<PatternSpec>& specs, const CudaAttentionOptions& o, at::ScalarType dtype) {
  const int64_t n = o.n.front();
  std::unique_ptr<Inputs> in;
  for (PatternSpec& spec : specs) {
    if (spec.block != 0) continue;
    if (!in) in = std::make_unique<Inputs>(make_inputs(o, n, dtype));
    std::string tried;
    double best_ms = 0.0;
    for (int block : kAutoBlocks) {
      const double t =
          run_sparse(*in, Pass::fwd, o.repeats, sk::cached_layout(n, block, spec.heads)).median_ms;
      char item[64];
      std::snprintf(item, sizeof item, "%sB=%d %.4f ms", tried.empty() ? "" : ", ", block, t);
      tried += item;
      if (spec.block == 0 || t < best_ms) {
        spec.block = block;
        best_ms = t;
      }
    }
    std::printf("block for %s: %d (fastest fwd at n=%lld: %s)\n", spec.desc.c_str(), spec.block,
                static_cast<long long>(n), tried.c_str());
    std::fflush(stdout);
  }
}

struct CudaRecord {
  int64_t n = 0;
  const PatternSpec* spec = nullptr;
  Pass pass = Pass::fwd;
  int64_t attended_pairs = 0;  // summed over heads, one batch element
  int64_t causal_pairs = 0;    // heads * n (n + 1) / 2: what dense causal attention computes
  double flops = 0.0;          // useful FLOPs of one sparse call, as the CPU rows count them
  DeviceTiming sparse;
  Baseline sdpa, masked, reshape;
  std::string sdpa_backend, reshape_kernel;
  double reshape_max_diff = 0.0;  // max |route - ours| of the forward on these inputs

  double attended_fraction() const {
    return static_cast<double>(attended_pairs) / static_cast<double>(causal_pairs);
  }
  // Useful TFLOP/s: ours over the attended pairs, SDPA's over the causal pairs it computes; and the share of
  // SDPA's rate that ours reaches (1 would be as fast per useful pair as dense attention).
  double tflops() const { return flops / (sparse.median_ms * 1e-3) / 1e12; }
  std::optional<double> sdpa_tflops() const {
    if (!sdpa.timing || sdpa.timing->median_ms <= 0.0) return std::nullopt;
    const double dense_flops = flops / static_cast<double>(attended_pairs) * static_cast<double>(causal_pairs);
    return dense_flops / (sdpa.timing->median_ms * 1e-3) / 1e12;
  }
  std::optional<double> share_of_sdpa_rate() const {
    const std::optional<double> dense = sdpa_tflops();
    if (!dense || *dense <= 0.0) return std::nullopt;
    return tflops() / *dense;
  }
  std::optional<double> speedup(const Baseline& b) const {
    if (!b.timing || sparse.median_ms <= 0.0) return std::nullopt;
    return b.timing->median_ms / sparse.median_ms;
  }
};

const char* pass_name(Pass pass) { return pass == Pass::fwd ? "fwd" : "fwdbwd"; }

std::string format_ms(const Baseline& b) {
  if (!b.timing) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", b.timing->median_ms);
  return text;
}

std::string format_speedup(const std::optional<double>& x) {
  if (!x) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1fx", *x);
  return text;
}

void print_table_header() {
  std::printf("%7s  %-8s  %-6s  %5s  %8s  %9s  %9s  %-19s  %7s  %9s  %9s  %7s  %8s  %10s  %10s\n", "n", "pattern",
              "pass", "block", "attended", "stx_ms", "sdpa_ms", "sdpa_backend", "vs_sdpa", "masked_ms", "vs_masked",
              "tflops", "of_sdpa", "reshape_ms", "vs_reshape");
}

void print_table_row(const CudaRecord& r) {
  std::string notes;
  if (!r.sdpa.timing) notes += "  sdpa " + r.sdpa.skipped;
  if (!r.masked.timing) notes += "  masked " + r.masked.skipped;
  if (!r.reshape.timing) notes += "  reshape " + r.reshape.skipped;
  // bf16 keeps 8 bits of mantissa: outputs of size ~1 agree to a few 1e-3 between two correct routes.
  if (!std::isnan(r.reshape_max_diff) && r.reshape_max_diff > kReshapeAgreement) {  // NaN: the route failed
    char text[96];
    std::snprintf(text, sizeof text, "  reshape route DISAGREES with stx: max |diff| %.3g", r.reshape_max_diff);
    notes += text;
  }
  char share[32] = "-";
  if (const std::optional<double> x = r.share_of_sdpa_rate()) std::snprintf(share, sizeof share, "%.0f%%", 100.0 * *x);
  std::printf("%7lld  %-8s  %-6s  %5d  %7.2f%%  %9.4f  %9s  %-19s  %7s  %9s  %9s  %7.1f  %8s  %10s  %10s%s\n",
              static_cast<long long>(r.n), r.spec->name.c_str(), pass_name(r.pass), r.spec->block,
              100.0 * r.attended_fraction(), r.sparse.median_ms, format_ms(r.sdpa).c_str(),
              r.sdpa_backend.empty() ? "-" : r.sdpa_backend.c_str(),
              format_speedup(r.speedup(r.sdpa)).c_str(), format_ms(r.masked).c_str(),
              format_speedup(r.speedup(r.masked)).c_str(), r.tflops(), share, format_ms(r.reshape).c_str(),
              format_speedup(r.speedup(r.reshape)).c_str(), notes.c_str());
  std::fflush(stdout);  // a sweep takes a while
}

struct CudaRunInfo {
  std::string device_name;
  std::string dtype;
  const CudaAttentionOptions* options = nullptr;
};

void write_cuda_json(const std::string& path, const CudaRunInfo& info,
                     const std::vector<CudaRecord>& records) {
  using Json = nlohmann::ordered_json;
  const auto number_or_null = [](const std::optional<double>& x) { return x ? Json(*x) : Json(nullptr); };
  const auto ms_or_null = [](const Baseline& b) {
    return b.timing ? Json(b.timing->median_ms) : Json(nullptr);
  };
  const auto repeats_or_null = [](const Baseline& b) {
    return b.timing ? Json(b.timing->repeats) : Json(nullptr);
  };
  const auto calls_or_null = [](const Baseline& b) {
    return b.timing ? Json(b.timing->calls_per_sample) : Json(nullptr);
  };
  const auto skipped_or_null = [](const Baseline& b) { return b.timing ? Json(nullptr) : Json(b.skipped); };
  Json rows = Json::array();
  for (const CudaRecord& r : records) {
    rows.push_back({
        {"n", r.n},
        {"pattern", r.spec->name},
        {"pattern_desc", r.spec->desc},
        {"pass", pass_name(r.pass)},
        {"block", r.spec->block},
        {"batch", info.options->batch},
        {"heads", info.options->heads},
        {"head_dim", info.options->head_dim},
        {"device", "cuda"},
        {"device_name", info.device_name.empty() ? Json(nullptr) : Json(info.device_name)},
        {"torch_version", TORCH_VERSION},
        {"dtype", info.dtype},
        {"attended_pairs", r.attended_pairs},
        {"causal_pairs", r.causal_pairs},
        {"attended_fraction", r.attended_fraction()},
        {"flops", r.flops},
        {"stx_ms", r.sparse.median_ms},
        {"sparse_repeats", r.sparse.repeats},
        {"sparse_calls_per_sample", r.sparse.calls_per_sample},
        {"tflops", r.tflops()},
        {"sdpa_tflops", number_or_null(r.sdpa_tflops())},
        {"share_of_sdpa_tflops", number_or_null(r.share_of_sdpa_rate())},
        {"sdpa_ms", ms_or_null(r.sdpa)},
        {"sdpa_repeats", repeats_or_null(r.sdpa)},
        {"sdpa_calls_per_sample", calls_or_null(r.sdpa)},
        {"sdpa_backend", r.sdpa_backend.empty() ? Json(nullptr) : Json(r.sdpa_backend)},
        {"sdpa_skipped", skipped_or_null(r.sdpa)},
        {"speedup_vs_sdpa", number_or_null(r.speedup(r.sdpa))},
        {"masked_ms", ms_or_null(r.masked)},
        {"masked_repeats", repeats_or_null(r.masked)},
        {"masked_calls_per_sample", calls_or_null(r.masked)},
        {"masked_skipped", skipped_or_null(r.masked)},
        {"masked_backward", r.pass == Pass::fwdbwd ? Json("autograd") : Json(nullptr)},
        {"speedup_vs_masked", number_or_null(r.speedup(r.masked))},
        {"reshape_ms", ms_or_null(r.reshape)},
        {"reshape_kernel", r.reshape_kernel},
        {"reshape_skipped", skipped_or_null(r.reshape)},
        {"reshape_max_abs_diff", std::isnan(r.reshape_max_diff) ? Json(nullptr) : Json(r.reshape_max_diff)},
        {"speedup_vs_reshape", number_or_null(r.speedup(r.reshape))},
    });
  }
  write_text_atomically(path, rows.dump(2) + "\n");
}

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "fp16") return at::kHalf;
  if (name == "fp32") return at::kFloat;
  return at::kBFloat16;
}

// The device's name and memory, from the CUDA runtime LibTorch links: LibTorch's C++ API has no call for
// the name that both 1.13 and 2.x share without ATen/cuda headers (which need cuBLAS headers too).
std::pair<std::string, int64_t> device_name_and_bytes() {
#ifdef STX_TORCH_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess) {
    return {properties.name, static_cast<int64_t>(properties.totalGlobalMem)};
  }
  cudaGetLastError();  // clear it, so that LibTorch's next check does not report it as its own
#endif
  return {"", 0};
}

}  // namespace

std::string cuda_unavailable_reason() {
#ifndef STX_TORCH_CUDA
  return "this stx-bench was built against a LibTorch without CUDA (" TORCH_VERSION ", see README: GPU path)";
#else
  if (!sk::built_with_cuda())
    return "stx_kernels was built without CUDA kernels (configure with -DSTX_CUDA=ON)";
  if (!torch::cuda::is_available()) return "LibTorch sees no CUDA device on this machine";
  return "";
#endif
}

void run_attention_cuda(const CudaAttentionOptions& o) {
  if (const std::string why = cuda_unavailable_reason(); !why.empty()) throw std::runtime_error(why);
  if (!o.json_path.empty()) check_json_path(o.json_path);
  const at::ScalarType dtype = parse_dtype(o.dtype);
  std::vector<PatternSpec> specs = make_patterns(o);
  std::vector<Pass> passes;
  for (const std::string& p : o.passes) passes.push_back(p == "fwd" ? Pass::fwd : Pass::fwdbwd);

  CudaRunInfo info;
  int64_t device_bytes = 0;
  std::tie(info.device_name, device_bytes) = device_name_and_bytes();
  info.dtype = o.dtype;
  info.options = &o;
  const double budget_bytes =
      o.dense_budget_gb ? *o.dense_budget_gb * 1e9 : kDeviceMemoryShare * static_cast<double>(device_bytes);

  std::printf("stx-bench attention --device cuda\n");
  std::printf("device: %s (cuda:0); LibTorch %s; dtype: %s\n",
              info.device_name.empty() ? "unknown" : info.device_name.c_str(), TORCH_VERSION,
              o.dtype.c_str());
  std::printf(
      "shape: batch %lld, heads %lld, head dim %lld; timing: warm-up once, median of %d samples, each "
      "back-to-back calls between device synchronizes (>= %.0f ms), reported per call\n",
      static_cast<long long>(o.batch), static_cast<long long>(o.heads), static_cast<long long>(o.head_dim),
      o.repeats, kSampleMs);
  std::printf(
      "stx: stx::sparse_attention (our CUDA kernels); fwdbwd = forward + torch::autograd::grad of q, k, v\n");
  std::printf("sdpa: at::scaled_dot_product_attention(is_causal=true); sdpa_backend: the backend it picks\n");
  std::printf(
      "masked: (q*scale) @ k^T, masked_fill(upper, -inf), softmax, @ v; backward through autograd; skipped "
      "above %.1f GB\n",
      budget_bytes / 1e9);
  std::printf(
      "reshape: the same sparse attention as LibTorch fused calls on reshaped views merged by log-sum-exp "
      "(%s; its backward holds the merge weights fixed)\n",
      stx::reshape_route_kernel(at::empty({1}, at::TensorOptions().device(at::kCUDA).dtype(dtype))).c_str());
  std::printf("attended: attended pairs / causal pairs; vs_*: baseline ms / stx ms\n");
  choose_blocks(specs, o, dtype);
  std::printf("\n");
  print_table_header();

  std::vector<CudaRecord> records;
  for (int64_t n : o.n) {
    const Inputs in = make_inputs(o, n, dtype);
    std::vector<std::shared_ptr<const sk::Layout>> layouts;
    for (const PatternSpec& spec : specs) layouts.push_back(sk::cached_layout(n, spec.block, spec.heads));
    std::vector<double> disagreement;
    for (size_t i = 0; i < specs.size(); ++i) disagreement.push_back(reshape_disagreement(in, specs[i], layouts[i]));
    for (Pass pass : passes) {
      std::vector<DeviceTiming> sparse;
      for (const auto& layout : layouts) sparse.push_back(run_sparse(in, pass, o.repeats, layout));
      const Baseline sdpa = run_sdpa(in, pass, o.repeats);
      const std::string backend = sdpa_backend(in, pass);
      const Baseline masked = run_masked(in, pass, o.repeats, budget_bytes);
      std::vector<Baseline> reshape;
      for (const PatternSpec& spec : specs) reshape.push_back(run_reshape(in, pass, o.repeats, spec));
      for (size_t i = 0; i < specs.size(); ++i) {
        CudaRecord r;
        r.n = n;
        r.spec = &specs[i];
        r.pass = pass;
        r.attended_pairs = layouts[i]->attended_pairs();
        r.causal_pairs = o.heads * n * (n + 1) / 2;
        r.flops = (pass == Pass::fwd ? 4.0 : 12.0) * static_cast<double>(o.head_dim) *
                  static_cast<double>(r.attended_pairs) * static_cast<double>(o.batch);
        r.sparse = sparse[i];
        r.sdpa = sdpa;
        r.sdpa_backend = backend;
        r.masked = masked;
        r.reshape = reshape[i];
        r.reshape_kernel = stx::reshape_route_kernel(in.q);
        r.reshape_max_diff = disagreement[i];
        records.push_back(r);
        print_table_row(records.back());
      }
    }
    // Written after every n, so that a sweep cut short still leaves its finished rows.
    if (!o.json_path.empty()) write_cuda_json(o.json_path, info, records);
  }
  if (!o.json_path.empty()) std::printf("\nwrote %zu records to %s\n", records.size(), o.json_path.c_str());
}

}  // namespace stx::bench
