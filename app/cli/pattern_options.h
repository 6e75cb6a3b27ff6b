// The attention-pattern options that `stx layout` and `stx check` share (--pattern, --stride, --c, --mode,
// --layer, --heads, --block).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cli_errors.h"
#include "stx/engine/pattern_view.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stx::cli {

struct PatternOptions {
  std::string pattern = "strided";
  int64_t stride = 128;  // l
  int64_t summary = 0;   // c; when --c is not given, l / 4 (the paper's l = 128, c = 32)
  std::string mode = "merged";
  int layer = 0;
  int heads = 2;
  int block = 64;
  const CLI::Option* summary_option = nullptr;  // tells "--c not given" from any value

  // Registers the options on a subcommand; default_stride lets `check` pick one near sqrt of its n.
  void add_to(CLI::App& command, int64_t default_stride);

  // Checks every value and throws UsageError naming the option.
  void validate() const;

  int64_t resolved_summary() const;
  // The layer these options describe, over sequence length n, for the engine.
  engine::LayerPatternSpec layer_spec(int64_t n) const;
};

}  // namespace stx::cli
