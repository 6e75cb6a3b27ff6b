#include "stx/engine/pattern_view.h"

#include <algorithm>

#include "stx/engine/error.h"
#include "stx/kernels/pattern.h"

namespace stx::engine {

namespace {

constexpr int64_t kMaxPatternLength = 1 << 20;

kernels::HeadPattern head_pattern(const PatternSpec& spec, PatternPart part) {
  const kernels::Subset subset = part == PatternPart::a1   ? kernels::Subset::a1
                                 : part == PatternPart::a2 ? kernels::Subset::a2
                                                           : kernels::Subset::both;
  if (spec.pattern == "dense") return kernels::HeadPattern::dense_causal();
  if (spec.pattern == "strided") return kernels::HeadPattern::strided(spec.stride, subset);
  return kernels::HeadPattern::fixed(spec.stride, spec.summary, subset);
}

void check_query(const PatternSpec& spec, int64_t query) {
  spec.validate();
  if (query < 0 || query >= spec.n) {
    throw Error("query position " + std::to_string(query) + " is outside 0.." + std::to_string(spec.n - 1));
  }
}

}  // namespace

void PatternSpec::validate() const {
  if (pattern != "dense" && pattern != "strided" && pattern != "fixed") {
    throw Error("unknown pattern '" + pattern + "' (expected dense, strided or fixed)");
  }
  if (n < 1 || n > kMaxPatternLength) {
    throw Error("n must be between 1 and " + std::to_string(kMaxPatternLength) + ", not " + std::to_string(n));
  }
  if (pattern == "dense") return;
  if (stride < 1) throw Error("the stride l must be at least 1, not " + std::to_string(stride));
  if (pattern == "fixed" && (summary < 1 || summary > stride)) {
    throw Error("the summary width c must be between 1 and l = " + std::to_string(stride) + ", not " +
                std::to_string(summary));
  }
}

std::vector<int64_t> attended_positions(const PatternSpec& spec, PatternPart part, int64_t query) {
  check_query(spec, query);
  return kernels::attended_set(head_pattern(spec, part), query);
}

std::vector<int64_t> two_hop_reach(const PatternSpec& spec, int64_t query) {
  check_query(spec, query);
  const kernels::HeadPattern merged = head_pattern(spec, PatternPart::both);
  std::vector<char> reached(static_cast<size_t>(query + 1), 0);
  for (const int64_t k : kernels::attended_set(merged, query)) {
    for (const int64_t j : kernels::attended_set(merged, k)) reached[static_cast<size_t>(j)] = 1;
  }
  std::vector<int64_t> out;
  for (int64_t j = 0; j <= query; ++j) {
    if (reached[static_cast<size_t>(j)]) out.push_back(j);
  }
  return out;
}

int64_t attended_count(const PatternSpec& spec, int64_t query) {
  check_query(spec, query);
  return kernels::attended_count(head_pattern(spec, PatternPart::both), query);
}

}  // namespace stx::engine
