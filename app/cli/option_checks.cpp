#include "option_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cli_errors.h"

namespace stx::cli {
namespace {

std::string shortest(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

}  // namespace

CLI::Validator finite_between(double lo, double hi) {
  const std::string range = shortest(lo) + " to " + shortest(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return "'" + text + "' is not a number";
        if (!std::isfinite(x) || x < lo || x > hi) return "must be a number from " + range + ", got " + text;
        return {};
      },
      "NUMBER in " + range);
}

CLI::Validator whole_between(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        const std::string reason = "must be a whole number from " + range + ", got '" + text + "'";
        const size_t digits = text.rfind('-', 0) == 0 ? 1 : 0;  // an optional minus sign
        if (text.size() == digits || text.find_first_not_of("0123456789", digits) != std::string::npos) {
          return reason;
        }
        errno = 0;
        const long long x = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE || x < lo || x > hi) return reason;
        return {};
      },
      "INT in " + range);
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string reason = "must be a whole number from 0 to 18446744073709551615, got '" + text + "'";
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return reason;
        errno = 0;
        (void)std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return reason;
        return {};
      },
      "0 to 2^64-1");
}

CLI::Validator non_empty_path() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "the path names no file" : ""; },
                        "PATH");
}

void require_between(const std::string& name, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw UsageError(name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                     ", got " + std::to_string(value));
}

}  // namespace stx::cli
