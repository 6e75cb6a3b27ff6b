// `stx layout`: what one position attends to, and what the block layout of a layer costs.
#pragma once

#include <cstdint>
#include <string>

#include "pattern_options.h"

namespace stx::cli {

struct LayoutOptions {
  PatternOptions pattern;
  int64_t n = 4096;
  int64_t query = 0;  // when --query is not given, the last position n - 1, whose attended set is the largest
  bool json = false;
  std::string png;  // when given, the connectivity matrix is drawn there
  int head = -1;    // the head drawn in the PNG; -1 = the union of all heads
  bool force = false;  // replace an existing --png file
  const CLI::Option* query_option = nullptr;
};

CLI::App* add_layout_command(CLI::App& app, LayoutOptions& options);
// Prints to stdout; throws UsageError for a bad option and engine::Error from the engine.
int run_layout_command(const LayoutOptions& options);

}  // namespace stx::cli
