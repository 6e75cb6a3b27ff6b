#include "pattern_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "stx/kernels/error.h"

namespace stx::cli {

namespace kernels = stx::kernels;

void require_between(const std::string& name, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw UsageError(name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                     ", got " + std::to_string(value));
}

void PatternOptions::add_to(CLI::App& command, int64_t default_stride) {
  stride = default_stride;
  command.add_option("--pattern", pattern, "attention pattern: strided, fixed or dense")
      ->capture_default_str();
  command.add_option("--stride", stride, "stride l of strided and fixed (the paper: near sqrt(n), 128)")
      ->capture_default_str();
  summary_option =
      command.add_option("--c", summary, "fixed only: summary cells c per block of l, 1..l [default: l/4]");
  command.add_option("--mode", mode, "how a layer's heads use A1 and A2: merged, interleaved or multihead")
      ->capture_default_str();
  command.add_option("--layer", layer, "layer index; interleaved uses A1 on even layers, A2 on odd ones")
      ->capture_default_str();
  command.add_option("--heads", heads, "number of heads, 1..64")->capture_default_str();
  command.add_option("--block", block, "block size B of the layout: 16, 32, 64 or 128")
      ->capture_default_str();
}

kernels::Pattern PatternOptions::parsed_pattern() const {
  try {
    return kernels::parse_pattern(pattern);
  } catch (const kernels::Error& e) {
    throw UsageError(std::string("--pattern: ") + e.what());
  }
}

kernels::Combination PatternOptions::parsed_mode() const {
  try {
    return kernels::parse_combination(mode);
  } catch (const kernels::Error& e) {
    throw UsageError(std::string("--mode: ") + e.what());
  }
}

int64_t PatternOptions::resolved_summary() const {
  if (summary_option != nullptr && summary_option->count() > 0) return summary;
  return std::max<int64_t>(1, stride / 4);
}

void PatternOptions::validate() const {
  const kernels::Pattern p = parsed_pattern();
  parsed_mode();
  // l may exceed n (then A2 holds only i itself), which a sweep over n legitimately produces.
  if (p != kernels::Pattern::dense) require_between("--stride", stride, 1, int64_t{1} << 20);
  if (p == kernels::Pattern::fixed && (resolved_summary() < 1 || resolved_summary() > stride))
    throw UsageError("--c must be between 1 and --stride (" + std::to_string(stride) + "), got " +
                     std::to_string(resolved_summary()));
  require_between("--heads", heads, 1, 64);
  require_between("--layer", layer, 0, 1 << 20);
  if (block != 16 && block != 32 && block != 64 && block != 128)
    throw UsageError("--block must be 16, 32, 64 or 128, got " + std::to_string(block));
}

std::vector<kernels::HeadPattern> PatternOptions::head_patterns() const {
  return kernels::layer_patterns(parsed_pattern(), stride, resolved_summary(), heads, parsed_mode(), layer);
}

std::string PatternOptions::summary_line() const {
  const kernels::Pattern p = parsed_pattern();
  std::string s = kernels::to_string(p);
  if (p == kernels::Pattern::dense) return s;
  s += " l=" + std::to_string(stride);
  if (p == kernels::Pattern::fixed) s += " c=" + std::to_string(resolved_summary());
  return s + ", " + kernels::to_string(parsed_mode()) + ", layer " + std::to_string(layer);
}

}  // namespace stx::cli
