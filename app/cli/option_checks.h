// Checks of option values: CLI11 validators for values CLI11's own checks let through (NaN, which compares
// false with both ends of a CLI::Range; negative or oversized numbers given to an unsigned option, which
// strtoull wraps; an empty path, taken for "not given"), and require_between for values checked after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

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

// Throws UsageError("<name> must be between <lo> and <hi>, got <value>") when value is out of [lo, hi]: for
// values that depend on other options, checked once all are parsed.
void require_between(const std::string& name, int64_t value, int64_t lo, int64_t hi);

}  // namespace stx::cli
