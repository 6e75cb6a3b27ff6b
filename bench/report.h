// Results of stx-bench attention: one Record per (n, pattern, pass), printed as a table row and
// written as one object of a JSON array.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace stx::bench {

struct RunInfo {
  std::string cpu_path;  // stx::kernels::to_string(active_cpu_isa())
  int torch_threads = 0;
  int openmp_threads = 0;
  double sgemm_gflops = 0.0;   // the roofline
  std::string dense_backward;  // "explicit" | "autograd"
};

struct Record {
  int64_t n = 0;
  std::string pattern;       // "strided" | "fixed"
  std::string pattern_desc;  // e.g. "fixed l=128 c=32 merged"
  std::string pass;          // "fwd" | "fwdbwd"
  int block = 0;
  int64_t batch = 0, heads = 0, head_dim = 0;
  int64_t attended_pairs = 0;  // summed over heads, one batch element
  double flops = 0.0;          // useful FLOPs of one sparse call
  double sparse_ms = 0.0;
  int sparse_repeats = 0;
  std::optional<double> dense_ms;  // empty when skipped
  int dense_repeats = 0;
  std::string dense_skipped;            // why, when skipped
  double gflops = 0.0;                  // flops / sparse time
  double roofline_fraction = 0.0;       // gflops / sgemm GFLOP/s
  double peak_mb = 0.0;                 // peak resident set during the sparse run
  double rss_before_mb = 0.0;           // resident set when the sparse run started
  std::optional<double> dense_peak_mb;  // the same for the dense run
  std::optional<double> dense_rss_before_mb;
  std::optional<double> reshape_ms;  // the reshape route (dense_baseline.h); empty when skipped
  std::string reshape_skipped;       // why, when skipped
  std::string reshape_kernel;        // its fused call: "math", "cpu_flash"

  std::optional<double> ratio() const;       // dense_ms / sparse_ms
  std::optional<double> vs_reshape() const;  // reshape_ms / sparse_ms
};

// The fixed-width table.
void print_table_header(std::ostream& os);
void print_table_row(std::ostream& os, const Record& r);

// Writes the records as a JSON array, atomically: a temporary file in the same folder, fsync, rename.
// Throws std::runtime_error("cannot write FILE: reason") on failure.
void write_json(const std::string& path, const RunInfo& info, const std::vector<Record>& records);

// Writes `text` to `path` the same way; write_json and the CUDA bench's JSON go through it.
void write_text_atomically(const std::string& path, const std::string& text);

// Throws the same error early when `path`'s folder is missing or not writable, before minutes of work.
void check_json_path(const std::string& path);

}  // namespace stx::bench
