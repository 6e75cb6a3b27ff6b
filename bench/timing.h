// Wall-clock timing: one warm-up call, then the median of several timed calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace stx::bench {

struct Timing {
  double median_ms = 0.0;
  double warmup_ms = 0.0;
  int repeats = 0;  // timed calls after the warm-up
};

inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

template <class Fn>
double time_once_ms(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

// Warm-up once, then `repeats` timed calls. When time_limit_s > 0 and the warm-up shows that `repeats`
// calls would take longer than that, fewer calls are made (at least one): slow dense cases take
// seconds per call.
template <class Fn>
Timing time_median(Fn&& fn, int repeats, double time_limit_s = 0.0) {
  Timing t;
  t.warmup_ms = time_once_ms(fn);
  t.repeats = std::max(1, repeats);
  if (time_limit_s > 0.0 && t.warmup_ms > 0.0) {
    const int affordable = static_cast<int>(std::floor(time_limit_s * 1000.0 / t.warmup_ms));
    t.repeats = std::max(1, std::min(t.repeats, affordable));
  }
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(t.repeats));
  for (int r = 0; r < t.repeats; ++r) samples.push_back(time_once_ms(fn));
  t.median_ms = median(std::move(samples));
  return t;
}

}  // namespace stx::bench
