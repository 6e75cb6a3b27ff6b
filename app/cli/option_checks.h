// CLI11 validators for values CLI11's own checks let through: NaN (it compares false with both ends of a
// CLI::Range), negative or oversized numbers given to an unsigned option (strtoull wraps them), and an
// empty path (taken for "not given").
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace stx::cli {

// A finite number in [lo, hi]; the message shows both ends as written (1e-09, not 0.000000).
CLI::Validator finite_between(double lo, double hi);
// A whole number in [lo, hi], in decimal digits with an optional minus sign. CLI::Range answered a word with
// "Value abc not in range 1 to 1000", as if it were a number too large.
CLI::Validator whole_between(int64_t lo, int64_t hi);
// Decimal digits only, no sign, at most 2^64 - 1.
CLI::Validator unsigned_64();
// A path that names something: not "".
CLI::Validator non_empty_path();

}  // namespace stx::cli
