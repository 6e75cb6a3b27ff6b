// stx-bench attention --device cuda: the torch op stx::sparse_attention (our CUDA kernels) against two
// dense LibTorch baselines on the same GPU inputs: at::scaled_dot_product_attention(is_causal=true) and
// masked matmul attention. Torch-free header; attention_bench.cpp parses the options and dispatches here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stx::bench {

struct CudaAttentionOptions {
  std::vector<int64_t> n;             // ascending, no repeats
  std::vector<std::string> patterns;  // "strided" | "fixed", merged heads
  std::vector<std::string> passes;    // "fwd" | "fwdbwd"
  int64_t heads = 4;
  int64_t head_dim = 64;
  int64_t batch = 1;
  int64_t stride = 128;  // l
  int64_t summary = 32;  // c, fixed only
  int block = 0;         // 0: try 32, 64, 128 at the smallest n
  int repeats = 5;
  std::string dtype = "bf16";  // "bf16" | "fp16" | "fp32"
  // Skip the masked baseline when its T x T temporaries would need more; empty: 80% of the device's memory.
  std::optional<double> dense_budget_gb;
  std::string json_path;
};

// Why this process cannot run the CUDA bench ("" when it can): a LibTorch or stx_kernels built without
// CUDA, or no CUDA device.
std::string cuda_unavailable_reason();

// Runs the sweep, prints the table and writes the JSON. Throws std::runtime_error on failure of our op;
// a baseline that fails (out of memory, no kernel) is reported in its row instead.
void run_attention_cuda(const CudaAttentionOptions& options);

}  // namespace stx::bench
