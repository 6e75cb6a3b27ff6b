// `stx check`: a kernel self-check that needs no test framework, for a fresh install or a new machine.
#pragma once

#include <cstdint>

#include "pattern_options.h"

namespace stx::cli {

struct CheckOptions {
  PatternOptions pattern;
  int64_t n = 2048;
  int64_t batch = 1;
  int64_t dim = 64;
  uint64_t seed = 0;
};

CLI::App* add_check_command(CLI::App& app, CheckOptions& options);
// Returns 0 on PASS and 1 on FAIL; throws UsageError for a bad option.
int run_check_command(const CheckOptions& options);

}  // namespace stx::cli
