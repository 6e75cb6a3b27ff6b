// A self-check of the CPU attention kernels on random inputs, for a fresh install or a new machine, without a
// test framework (`stx check`): the decode kernel at every position against the forward, the portable path
// against the vectorised one, and the forward's time against dense attention.
//
//   stx::engine::KernelCheckRequest request;
//   request.layer.n = 2048;
//   request.layer.stride = 64;
//   const stx::engine::KernelCheckReport report = stx::engine::run_kernel_check(request);
//   report.passed();
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "stx/engine/pattern_view.h"

namespace stx::engine {

struct KernelCheckRequest {
  LayerPatternSpec layer;  // layer.n is the sequence length
  int64_t batch = 1;
  int64_t head_dim = 64;
  uint64_t seed = 0;  // of the random q, k, v

  // The dense timing is O(n^2): at this n it already takes seconds per forward on a laptop.
  static constexpr int64_t kMaxLength = 16384;
  static constexpr int64_t kMaxBatch = 16;
  static constexpr int64_t kMaxHeadDim = 256;
  // q, k, v and four outputs live at once; this keeps them under about 1 GB.
  static constexpr int64_t kMaxElements = int64_t{1} << 25;  // batch x heads x n x head_dim

  // Throws Error naming the setting: those of LayerPatternSpec::validate, "batch", "head_dim", and all four
  // of "batch", "heads", "n", "head_dim" when together they are too large.
  void validate() const;
};

// One attention output against another of the same inputs.
struct KernelComparison {
  double max_abs = 0.0;      // over out
  double nmse = 0.0;         // sum (a - b)^2 / sum b^2 over out
  double lse_max_abs = 0.0;  // over the log-sum-exp
  bool finite = true;
  bool passed = false;  // finite, and within the project's bounds for attention against a reference
};

// The processor the check runs on, for a front end to show before the check's seconds of work.
struct KernelMachine {
  std::string cpu_path;  // the fastest code path this processor has, which the check times: "avx2+fma"
  int threads = 0;       // OpenMP threads the CPU kernels split their work over
  bool cuda_built = false;
  bool cuda_device = false;
};
KernelMachine kernel_machine();

struct KernelCheckReport {
  KernelMachine machine;
  KernelComparison decode_vs_forward;                      // decode at every position against the forward
  std::optional<KernelComparison> portable_vs_vectorised;  // absent with only the portable path
  double sparse_seconds = 0.0;  // best wall time of the layer's forward, on machine.cpu_path
  double dense_seconds = 0.0;   // the same with dense causal heads
  bool passed() const {
    return decode_vs_forward.passed && (!portable_vs_vectorised || portable_vs_vectorised->passed);
  }
};

// Runs on the CPU (all of its threads), whatever the build; the process's code path is left as it was.
KernelCheckReport run_kernel_check(const KernelCheckRequest& request);

}  // namespace stx::engine
