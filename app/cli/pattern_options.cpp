#include "pattern_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "option_checks.h"

namespace stx::cli {

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
  command
      .add_option("--heads", heads,
                  "number of heads, 1.." + std::to_string(engine::LayerPatternSpec::kMaxHeads))
      ->capture_default_str();
  command.add_option("--block", block, "block size B of the layout: 16, 32, 64 or 128")
      ->capture_default_str();
}

int64_t PatternOptions::resolved_summary() const {
  if (summary_option != nullptr && summary_option->count() > 0) return summary;
  return std::max<int64_t>(1, stride / 4);
}

void PatternOptions::validate() const {
  try {
    engine::check_pattern_names(pattern, mode);
  } catch (const engine::Error& e) {
    throw UsageError(flag_of(e.settings().front()) + ": " + e.what());  // "--pattern: unknown pattern ..."
  }
  using Layer = engine::LayerPatternSpec;
  // l may exceed n (then A2 holds only i itself), which a sweep over n legitimately produces.
  if (pattern != "dense") require_between("--stride", stride, 1, Layer::kMaxStride);
  if (pattern == "fixed" && (resolved_summary() < 1 || resolved_summary() > stride))
    throw UsageError("--c must be between 1 and --stride (" + std::to_string(stride) + "), got " +
                     std::to_string(resolved_summary()));
  require_between("--heads", heads, 1, Layer::kMaxHeads);
  require_between("--layer", layer, 0, Layer::kMaxLayer);
  if (block != 16 && block != 32 && block != 64 && block != 128)
    throw UsageError("--block must be 16, 32, 64 or 128, got " + std::to_string(block));
}

engine::LayerPatternSpec PatternOptions::layer_spec(int64_t n) const {
  return engine::LayerPatternSpec{{pattern, n, stride, resolved_summary()}, mode, layer, heads, block};
}

}  // namespace stx::cli
